"""Copying a log into another, whatever their backends, and checking the copy event for event.

Events go across as they are (positions, versions, times, actors, calls, and their stored
bytes, whichever codec wrote them) in transactions of `BATCH`, so a copy of a million events
shows progress, holds one batch at a time and, cut off, resumes where it stopped: the target's
events must be the source's first ones as they are now, byte for byte (checked whole before
anything is written: a forget since rewrote some), and the copy goes on after them. No other
process writes the target meanwhile.
Idempotency records (a batch at a time too) and the erasure count follow once the events are
all across. `verify_copy` compares every stored byte, a batch at a time, and the target's
index of streams with its events.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from contextlib import nullcontext

import msgspec
from chronograph.eventstore.codec import Codec, Envelope
from chronograph.eventstore.errors import EventStoreError, StoreCorruptError
from chronograph.eventstore.log import EventLog, LogReader, LogTransaction

__all__ = ["BATCH", "CopyError", "copy_log", "verify_copy"]

BATCH = 10_000
"""Events per transaction of the target."""


class CopyError(EventStoreError):
    """The target is not the source's first events as they are now, or changed under the copy."""


def copy_log(source: EventLog, target: EventLog, progress: Callable[[int, int], None] | None = None, *,
             kept: bool = False) -> int:
    """Copy every event of `source` that `target` lacks, then its idempotency records and erasure
    count; return how many events were copied. Other processes are kept from writing `target`
    for the whole copy (`EventLog.exclusive`), unless the caller `kept` them out already.

    Raises:
        CopyError: If `target` is not exactly the first events of `source` as they are now (its
            events, stored bytes and all), or another process has it open; nothing was copied.
    """
    with nullcontext() if kept else target.exclusive(), source.read() as reader:
        with target.read() as held:
            head, start = reader.head(), held.head()
            had_records = next(iter(held.idempotency_records()), None) is not None
            differs = start > head or next(_differences(source.codec, reader, held, start), None) is not None
        if differs:
            raise CopyError(
                f"{target.location} holds {start:,} event(s) that are not exactly the first ones of "
                f"{source.location} as it is now (it holds more, or another store's, or an event the source has "
                "changed since, as a forget does); nothing was copied. Copy into an empty store (a new folder "
                "or schema), or remove this one and copy again")
        for first in range(start + 1, head + 1, BATCH):
            stored = reader.stored(first, min(first + BATCH - 1, head))
            batch = source.codec.decode_many(stored)
            if len(batch) != len(stored) or batch[0].position != first:
                raise CopyError(f"{source.location} has no event at position {first + len(batch)} (head {head})")

            def put(tx: LogTransaction, batch: list[Envelope] = batch, stored: list[bytes] = stored) -> None:
                tx.restore(batch, stored)

            _write(target, put)
            if progress is not None:
                progress(batch[-1].position, head)
        erasures = reader.erasures()
        records = iter(reader.idempotency_records())
        while chunk := list(itertools.islice(records, BATCH)):

            def remember(tx: LogTransaction, chunk: list[tuple[bytes, bytes]] = chunk) -> None:
                tx.restore_records(chunk, 0)

            _write(target, remember)

        def count(tx: LogTransaction) -> None:  # records it held may have been replaced: its scrub's to say
            tx.restore_records([], erasures, clean=not (start and had_records))

        _write(target, count)
    return head - start


def _write(target: EventLog, work: Callable[[LogTransaction], None]) -> None:
    """Run `work` in a transaction of `target`; an error it raises names `target` (it is raised
    inside the source's snapshot, which would otherwise claim it)."""
    try:
        target.transact(work)
    except StoreCorruptError as error:
        said = str(error)
        raise CopyError(said if target.location in said else f"{target.location}: {said}") from None


def _differences(codec: Codec, a: LogReader, b: LogReader, last: int,
                 progress: Callable[[int, int], None] | None = None) -> Iterator[int]:
    """The positions up to `last` whose stored events differ between two logs, a batch at a time."""
    for first in range(1, last + 1, BATCH):
        stop = min(first + BATCH - 1, last)
        for offset, (left, right) in enumerate(zip(a.stored(first, stop), b.stored(first, stop), strict=True)):
            if not _same(codec, left, right):
                yield first + offset
        if progress is not None:
            progress(stop, last)


def verify_copy(source: EventLog, target: EventLog, progress: Callable[[int, int], None] | None = None) -> list[str]:
    """The differences between the two logs, event by event and record by record, and where the
    target's index of streams disagrees with its events (none: equal)."""
    problems: list[str] = []
    with source.read() as a, target.read() as b:
        if a.head() != b.head():
            problems.append(f"heads differ: {a.head()} and {b.head()}")
        problems.extend(f"the event at position {position} differs"
                        for position in _differences(source.codec, a, b, min(a.head(), b.head()), progress))
        if any(left != right for left, right in _paired(a.idempotency_records(), b.idempotency_records())):
            problems.append("the idempotency records differ")
        if a.erasures() != b.erasures():
            problems.append(f"the erasure counts differ: {a.erasures()} and {b.erasures()}")
        problems.extend(b.index_problems())  # what reads by stream, and erasures, find the copy's events by
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
