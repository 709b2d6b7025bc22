"""What erasing means for any backend: an event re-enveloped, and an idempotency record forgotten.

The backends store the same bytes (the codec's envelope, the msgpack `Recorded`), so the
same two functions say how an erased event and a forgotten result look, whichever
database holds them.
"""

from __future__ import annotations

from collections.abc import Mapping

import msgspec
from chronograph.eventstore.codec import Codec, Envelope
from chronograph.eventstore.events import Event
from chronograph.eventstore.writes import Recorded, recorded_decoder

__all__ = ["forgotten_result", "reenveloped"]

_encoder = msgspec.msgpack.Encoder()


def reenveloped(codec: Codec, original: Envelope, stream: str, event: Event) -> tuple[Envelope, bytes]:
    """`event` in `original`'s envelope (position, version, time, actor, call, key), on `stream`,
    and its stored bytes."""
    envelope = Envelope(
        original.position, stream, original.version, original.recorded_at, codec.schema_of(event),
        original.actor, original.correlation_id, original.idempotency_key, event, original.principal,
    )
    return envelope, codec.encode(envelope)


def forgotten_result(stored: bytes, streams: Mapping[str, str]) -> bytes | None:
    """The stored idempotency record `stored` without its result and with `streams` (old id ->
    new id) renamed, if it wrote to one of them; None if it did not (nothing to change). The
    key stays: a retry must still write nothing."""
    recorded = recorded_decoder.decode(stored)
    if not any(stream in streams for stream in recorded.versions):
        return None
    versions = {streams.get(stream, stream): version for stream, version in recorded.versions.items()}
    return _encoder.encode(Recorded(recorded.fingerprint, recorded.first_position, recorded.last_position,
                                    versions, None))
