"""Erasing from the LMDB log: the one exception to "never rewritten", for forgetting.

`erase` replaces the events of some streams by what `redact` makes of them, in place:
the same position, version, time, actor and call, so the log keeps its shape and its
audit trail. A stream may move to a new id on the way, every event of it (a relation's id
spells the names it joins); one that stays may keep some events as they are. The checksums
are rewritten with the events, the results that idempotency keys remember of the calls
that wrote them, or that quote what was erased, are dropped (a retried call is told its
answer was erased, never shown it), and the erasure is counted in the log's `meta`, so that any
process caching what the log said knows to let go of it. `rewrite` replaces one event
of a stream that stays (a reference to a forgotten name).

Neither touches the old copies of the pages they change: LMDB leaves those in its free
list, and `lmdbscrub` zeroes them once no reader can see them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import lmdb
from chronograph.eventstore import checksums
from chronograph.eventstore.codec import Envelope
from chronograph.eventstore.erasure import forgotten_result, redactions, reenveloped
from chronograph.eventstore.errors import StoreCorruptError
from chronograph.eventstore.events import Event
from chronograph.eventstore.keys import pack_u64
from chronograph.eventstore.lmdb.reader import ERASURES, LmdbReader

__all__ = ["erase", "rewrite"]


def erase(
    reader: LmdbReader, streams: Mapping[str, str], redact: Callable[[Envelope], Event | None],
    quoted: Sequence[bytes] = (),
) -> list[Envelope]:
    """Replace the events of each stream in `streams` (old id -> new id, the same to keep it)
    by `redact(envelope)` (None keeps an event of a stream that stays as it is); forget the
    results idempotency keys remember of the calls that wrote them or that quote one of
    `quoted`; return the original envelopes erased, oldest first.

    Raises:
        StoreCorruptError: If a stream's index points at a missing event.
        ValueError: If `redact` would keep an event of a stream that moves.
    """
    txn, dbs = reader.txn, reader.dbs
    originals: list[Envelope] = []
    for old, new in streams.items():
        events = list(reader.stream(old))
        redacted = redactions(events, old, new, redact)
        for envelope, event in redacted:
            _put(reader, envelope, new, event)
        events = [envelope for envelope, _ in redacted]
        if new != old and events:
            old_key, new_key, index = dbs.key(old), dbs.key(new), dbs.layout
            for envelope in events:
                txn.delete(index.key(old_key, envelope.version), db=dbs.streams)
                txn.put(index.key(new_key, envelope.version), index.value(envelope.position), db=dbs.streams)
            if dbs.heads is not None:
                txn.delete(old_key, db=dbs.heads)
                txn.put(new_key, pack_u64(events[-1].version), db=dbs.heads)
        originals.extend(events)
    _forget_results(txn, reader, streams, sorted(envelope.position for envelope in originals), quoted)
    count = reader.erasures() + 1
    txn.put(ERASURES, pack_u64(count), db=dbs.meta)
    originals.sort(key=lambda envelope: envelope.position)
    return originals


def rewrite(reader: LmdbReader, position: int, event: Event) -> Envelope:
    """Replace the event at `position` by `event`, keeping its envelope; return the original.

    Raises:
        StoreCorruptError: If there is no event at `position`.
    """
    original = reader.get(position)
    if original is None:
        raise StoreCorruptError(f"the log has no event at position {position} to rewrite")
    _put(reader, original, original.stream, event)
    return original


def _put(reader: LmdbReader, original: Envelope, stream: str, event: Event) -> None:
    _, stored = reenveloped(reader.codec, original, stream, event)
    reader.txn.put(pack_u64(original.position), stored, db=reader.dbs.log)
    if reader.dbs.sums is not None:
        checksums.record(reader.txn, reader.dbs.sums, original.position, [checksums.digest(stored)])


def _forget_results(txn: lmdb.Transaction, reader: LmdbReader, streams: Mapping[str, str], erased: Sequence[int],
                    quoted: Sequence[bytes]) -> None:
    """Drop the results remembered for calls that wrote at the `erased` positions or that quote
    one of `quoted`, and rename the streams that moved in what the keys remember (the key itself
    stays: a retry must still write nothing)."""
    changed: list[tuple[bytes, bytes]] = []
    with txn.cursor(reader.dbs.idempotency) as cursor:
        for key, value in cursor:
            kept = forgotten_result(bytes(value), streams, erased, quoted)
            if kept is not None:
                changed.append((bytes(key), kept))
    for key, value in changed:
        txn.put(key, value, db=reader.dbs.idempotency)
