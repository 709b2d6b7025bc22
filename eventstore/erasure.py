"""What erasing means for any backend: an event re-enveloped, and an idempotency record forgotten.

The backends store the same bytes (the codec's envelope, the msgpack `Recorded`), so the
same two functions say how an erased event and a forgotten result look, whichever
database holds them.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import msgspec
from chronograph.eventstore.codec import Codec, Envelope
from chronograph.eventstore.events import Event
from chronograph.eventstore.writes import Recorded, recorded_decoder

__all__ = ["STANDS_ALONE", "forgotten_result", "reenveloped", "redactions"]

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
    (ascending), or if the result quotes one of the `quoted` texts (an answer may quote what was
    erased without writing it: a merge's target, a call that changed nothing; see `quotes`); the streams it
    wrote are renamed as `streams` (old id -> new id) moved them. The key stays: a retry must
    still write nothing, and is told its answer was erased."""
    recorded = recorded_decoder.decode(stored)
    first, last = recorded.first_position, recorded.last_position
    at = bisect_left(erased, first)
    wrote = at < len(erased) and erased[at] <= last
    quotes = recorded.result is not None and any(needle in recorded.result for needle in quoted) and (
        _quotes(recorded.result, quoted))
    moved = any(streams.get(stream, stream) != stream for stream in recorded.versions)
    if not (wrote or quotes or moved) or (recorded.result is None and not moved):
        return None
    versions = {streams.get(stream, stream): version for stream, version in recorded.versions.items()}
    result = None if wrote or quotes else recorded.result
    return _encoder.encode(Recorded(recorded.fingerprint, first, last, versions, result))


STANDS_ALONE = 8
"""Texts shorter than this many bytes quote what was erased only where they stand alone."""


def _quotes(result: bytes, quoted: Sequence[bytes]) -> bool:
    """Whether the kept answer `result` (msgpack) quotes one of `quoted`: holds a text of
    `STANDS_ALONE` bytes or more anywhere, or a shorter one as a whole string or a word of one
    (no letter or digit on either side: a name in a message, "merged 'X'"). A short name met
    inside a longer word ("X" in "Xavier", "o" in "relations") is another word, not the name.
    An answer that cannot be read is taken to quote it: privacy first."""
    present = [needle for needle in quoted if needle in result]
    if any(len(needle) >= STANDS_ALONE for needle in present):
        return True
    if not present:
        return False
    try:
        strings = list(_strings(msgspec.msgpack.decode(result)))
    except (msgspec.DecodeError, RecursionError):
        return True
    texts = [needle.decode("utf-8", "surrogatepass") for needle in present]
    alone = re.compile("|".join(rf"(?<!\w){re.escape(text)}(?!\w)" for text in texts))
    return any(alone.search(string) for string in strings)


def _strings(value: Any) -> Iterator[str]:
    """Every string in a decoded msgpack value, map keys too (bytes read as UTF-8)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, (bytes, bytearray, memoryview)):
        yield bytes(value).decode("utf-8", "replace")
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _strings(key)
            yield from _strings(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _strings(item)
