"""What a writer hands to `append`, and what it gets back."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import msgspec
from chronograph.eventstore.events import Event

__all__ = ["ANY", "EXISTS", "NO_STREAM", "AppendResult", "ExpectedVersion", "StreamWrite"]

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
