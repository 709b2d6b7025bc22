"""What erasing means for any backend: an event re-enveloped, and an idempotency record forgotten.

The backends store the same bytes (the codec's envelope, the msgpack `Recorded`), so the
same two functions say how an erased event and a forgotten result look, whichever
database holds them.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Mapping, Sequence

import msgspec
from chronograph.eventstore.codec import Codec, Envelope
from chronograph.eventstore.events import Event
from chronograph.eventstore.writes import Recorded, recorded_decoder

__all__ = ["forgotten_result", "reenveloped", "redactions"]

_encoder = msgspec.msgpack.Encoder()


def reenveloped(codec: Codec, original: Envelope, stream: str, event: Event) -> tuple[Envelope, bytes]:
    """`event` in `original`'s envelope (position, version, time, actor, call, key), on `stream`,
    and its stored bytes."""
    envelope = Envelope(
        original.position, stream, original.version, original.recorded_at, codec.schema_of(event),
        original.actor, original.correlation_id, original.idempotency_key, event, original.principal,
    )
    return envelope, codec.encode(envelope)


def redactions(events: Sequence[Envelope], old: str, new: str,
               redact: Callable[[Envelope], Event | None]) -> list[tuple[Envelope, Event]]:
    """The events of stream `old` an erasure replaces, each with what replaces it: every one when
    the stream moves to `new`; those `redact` does not keep (None) when it stays.

    Raises:
        ValueError: If `redact` keeps an event of a stream that moves (half a stream would
            stay under an id the erasure gives up).
    """
    redacted = [(envelope, redact(envelope)) for envelope in events]
    if new != old and any(event is None for _, event in redacted):
        raise ValueError(f"an erasure that moves stream {old!r} must erase every event of it")
    return [(envelope, event) for envelope, event in redacted if event is not None]


def forgotten_result(stored: bytes, streams: Mapping[str, str], erased: Sequence[int],
                     quoted: Sequence[bytes] = ()) -> bytes | None:
    """The stored idempotency record `stored` as an erasure leaves it, or None if it does not
    change it. Its result goes if its call wrote an event at one of the `erased` positions
    (ascending), or if the result holds one of the `quoted` bytes (an answer may quote what was
    erased without writing it: a merge's target, a call that changed nothing); the streams it
    wrote are renamed as `streams` (old id -> new id) moved them. The key stays: a retry must
    still write nothing, and is told its answer was erased."""
    recorded = recorded_decoder.decode(stored)
    first, last = recorded.first_position, recorded.last_position
    at = bisect_left(erased, first)
    wrote = at < len(erased) and erased[at] <= last
    quotes = recorded.result is not None and any(needle in recorded.result for needle in quoted)
    moved = any(streams.get(stream, stream) != stream for stream in recorded.versions)
    if not (wrote or quotes or moved) or (recorded.result is None and not moved):
        return None
    versions = {streams.get(stream, stream): version for stream, version in recorded.versions.items()}
    result = None if wrote or quotes else recorded.result
    return _encoder.encode(Recorded(recorded.fingerprint, first, last, versions, result))
