"""What a writer hands to `append`, and what it gets back."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Literal

import msgspec
from chronograph.eventstore.codec import Envelope
from chronograph.eventstore.errors import ConcurrencyError, StoreCorruptError
from chronograph.eventstore.events import Event
from chronograph.eventstore.keys import digest

__all__ = [
    "ANY", "EXISTS", "NO_STREAM", "AppendResult", "ExpectedVersion", "Recorded", "StreamWrite", "check_continuation",
    "check_expected",
    "fingerprint_of", "recorded_decoder", "replayed",
]

ANY: Literal["any"] = "any"
"""Write whatever version the stream is at."""
NO_STREAM: Literal["no_stream"] = "no_stream"
"""Write only if the stream has no events yet."""
EXISTS: Literal["exists"] = "exists"
"""Write only if the stream has at least one event."""

ExpectedVersion = int | Literal["any", "no_stream", "exists"]
"""`ANY`, `NO_STREAM`, `EXISTS`, or the exact current version (0 meaning no stream)."""


class StreamWrite(msgspec.Struct, frozen=True):
    """Events to append to one stream, guarded by the version the writer expects it at."""

    stream: str
    events: Sequence[Event]
    expected: ExpectedVersion = ANY


class AppendResult(msgspec.Struct, frozen=True):
    """The outcome of an append (or of a replay of one, through its idempotency key)."""

    first_position: int
    """Position of the first event written; `last_position + 1` when none were."""
    last_position: int
    """Position of the last event written, i.e. the log head after the append."""
    versions: dict[str, int]
    """The version each written stream reached."""
    replayed: bool = False
    """True when the idempotency key was seen before: nothing new was written."""
    result: bytes | None = None
    """The caller's opaque result recorded with the idempotency key, if any."""

    @property
    def count(self) -> int:
        """How many events the append wrote."""
        return self.last_position - self.first_position + 1


class Recorded(msgspec.Struct, frozen=True, array_like=True):
    """What an idempotency key produced: the writes' fingerprint, the positions and versions
    they reached, and the caller's result (None once erased by forgetting)."""

    fingerprint: bytes
    first_position: int
    last_position: int
    versions: dict[str, int]
    result: bytes | None


recorded_decoder = msgspec.msgpack.Decoder(Recorded)


_encoder = msgspec.msgpack.Encoder()


def check_expected(stream: str, expected: ExpectedVersion, current: int) -> None:
    """Raise ConcurrencyError unless `stream`, at version `current`, is where `expected` says.

    Raises:
        ConcurrencyError: If it is not.
        ValueError: If `expected` is not an expected version.
    """
    if expected == ANY:
        return
    if expected == NO_STREAM:
        ok = current == 0
    elif expected == EXISTS:
        ok = current > 0
    elif isinstance(expected, int) and not isinstance(expected, bool):
        ok = current == expected
    else:
        raise ValueError(f"{expected!r} is not an expected version (any, no_stream, exists or an int)")
    if not ok:
        raise ConcurrencyError(stream, expected, current)


def fingerprint_of(encode_event: Callable[[Event], bytes], writes: Sequence[StreamWrite]) -> bytes:
    """What an idempotency key remembers of the writes it was used for (a digest)."""
    parts = [_encoder.encode([write.stream, write.expected]) + b"".join(encode_event(e) for e in write.events)
             for write in writes]
    return digest(_encoder.encode(parts), 32)


def replayed(recorded: Recorded) -> AppendResult:
    """The result of the append `recorded`, returned again for a repeated idempotency key."""
    return AppendResult(recorded.first_position, recorded.last_position, recorded.versions, replayed=True,
                        result=recorded.result)


def check_continuation(envelopes: Sequence[Envelope], head: int, versions: dict[str, int]) -> dict[str, int]:
    """Check that `envelopes` (a copy of another log's) continue a log at `head` whose streams
    are at `versions` (each stream they name; updated in place); return `versions`.

    Raises:
        StoreCorruptError: If one does not continue the log or its stream.
    """
    for offset, envelope in enumerate(envelopes):
        current = versions[envelope.stream]
        if envelope.position != head + 1 + offset or envelope.version != current + 1:
            raise StoreCorruptError(
                f"the event copied to position {head + 1 + offset} says position {envelope.position}, version "
                f"{envelope.version} of {envelope.stream!r} (which is at {current}): not a continuation")
        versions[envelope.stream] = envelope.version
    return versions
