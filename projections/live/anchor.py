"""Whether the log a cache's views were folded from is still the log they stand on.

A log in a database server can go back under its caches: the database restored from an older
backup, or a failover to a replica that missed the last commits. Its head may then stand below
a cache's checkpoint, or past it with other events at the same positions; a cache that caught up
from its checkpoint would answer what the log lost and mix two histories. So the views keep,
with their checkpoint and in the same transaction, a mark of the event at it (`mark`), and a
cache compares it with the log's event there (`went_back`) at open, before a write (free: the
event comes back with the lock), when it catches up, and before a call of a process that does
not follow the log.

The mark is what an erasure keeps of an event (its version, time and call), not its stored bytes'
checksum: a forget rewrites the bytes of the events it erases, which must not read as a log that
went back. The call's id is 16 random bytes per tool call, so an event written after a restore at a
position the cache folded another event at is told apart from it, whatever the clock says.
"""

from __future__ import annotations

import msgspec
import xxhash
from chronograph.eventstore import Envelope, LogReader
from chronograph.eventstore.keys import pack_u64

__all__ = ["mark", "went_back"]


def mark(envelope: object) -> int:
    """What identifies `envelope` (an `Envelope`, or a slim one) across erasures: 64 bits, never 0."""
    call = envelope.correlation_id  # type: ignore[attr-defined]
    called = call.encode() if isinstance(call, str) else msgspec.msgpack.decode(call).encode()
    version, recorded_at = envelope.version, envelope.recorded_at  # type: ignore[attr-defined]
    return xxhash.xxh3_64_intdigest(pack_u64(version) + pack_u64(recorded_at) + called) or 1


def went_back(log: LogReader, checkpoint: int, anchor: int, head: int | None = None) -> str | None:
    """Why the views at `checkpoint`, whose event there had the mark `anchor` (0: not known), are
    not views of `log` as it stands (its head below the checkpoint, or another event at it), or
    None if they are. `head`: the log's head, if known already."""
    if checkpoint == 0:
        return None
    head = log.head() if head is None else head
    if head < checkpoint:
        return (f"the log ends at position {head:,}, before the {checkpoint:,} events the cache holds (the "
                "database was restored from an older backup, or failed over to a replica that missed commits)")
    if not anchor:
        return None
    found: Envelope | None = log.get(checkpoint)
    if found is None or mark(found) != anchor:
        return (f"the log holds another event at position {checkpoint:,} than the one the cache folded there (the "
                "database was restored from an older backup, or failed over to a replica that missed commits, and "
                "written to since)")
    return None
