"""The append's rules, once: what a writer hands to `append`, what it gets back, and the
checks every backend makes the same way (idempotency keys, expected versions, positions,
one timestamp per transaction, checksums, continuations of a copy).

`Appender` is the writing half of a `LogTransaction`: a backend's transaction inherits
it and provides only what touches its storage (`_store`, `_store_copy`, `_recorded`,
`_remember`, and `_prepare` where it wants to read ahead).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Literal, cast

import msgspec
from chronograph.eventstore import checksums, clock
from chronograph.eventstore.codec import LOCAL, Codec, Envelope, check_principal
from chronograph.eventstore.errors import ConcurrencyError, IdempotencyConflictError, StoreCorruptError
from chronograph.eventstore.events import Event
from chronograph.eventstore.keys import digest

if TYPE_CHECKING:
    from chronograph.eventstore.log import EraseHook, InlineHook, LogTransaction

__all__ = [
    "ANY", "EXISTS", "NO_STREAM", "AppendResult", "Appender", "ExpectedVersion", "Recorded", "Row", "StreamWrite",
    "check_continuation", "check_expected", "fingerprint_of", "recorded_decoder", "replayed",
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


Row = tuple[int, str, int, int, int, bytes]
"""One stored event: position, stream, version, recorded_at, checksum, the encoded envelope."""


class Appender:
    """The writing half of a log transaction, the same on every backend.

    A backend's transaction sets `codec` and `_hooks`, reads like a `LogReader` (`head`,
    `stream_version`, `last_recorded_at`) and stores what this decides.
    """

    codec: Codec
    _hooks: Sequence[InlineHook]
    _erase_hooks: Sequence[EraseHook]
    _recorded_at: int | None

    # --- what the backend provides ------------------------------------------------------

    if TYPE_CHECKING:  # read as the backend's reader reads them

        def head(self) -> int: ...

        def stream_version(self, stream: str) -> int: ...

        def last_recorded_at(self) -> int: ...

    def _prepare(self, writes: Sequence[StreamWrite]) -> None:
        """Before the first check: make room, read ahead the versions `writes` need."""

    def _store(self, rows: list[Row], versions: dict[str, int], writes: Sequence[StreamWrite]) -> None:
        """Store `rows` after the head and move the heads of their streams to `versions`."""
        raise NotImplementedError

    def _store_copy(self, rows: list[Row], versions: dict[str, int]) -> None:
        """Store `rows`, a copy of another log's events, as `_store` does."""
        self._store(rows, versions, ())

    def _recorded(self, idempotency_key: str) -> Recorded | None:
        """The record kept under `idempotency_key`, or None."""
        raise NotImplementedError

    def _remember(self, idempotency_key: str, record: bytes, *, new: bool) -> None:
        """Keep `record` under `idempotency_key` (`new`: the key has none yet)."""
        raise NotImplementedError

    def _erase(self, streams: Mapping[str, str], redact: Callable[[Envelope], Event | None],
               quoted: Sequence[bytes]) -> list[Envelope]:
        """Re-envelope the events of `streams` (old id -> new id) with `redact(envelope)` in
        place (`erasure.redactions`), forget what idempotency records remember of them or
        that quotes `quoted` (`erasure.forgotten_result`), count the erasure; return the
        originals erased."""
        raise NotImplementedError

    # --- the rules ------------------------------------------------------------------------

    @property
    def recorded_at(self) -> int:
        """The timestamp of every event appended in this transaction: now, unless the newest
        event is later (the clock stepped back), so that it never decreases along the log."""
        if self._recorded_at is None:
            self._recorded_at = max(clock.now_us(), self.last_recorded_at())
        return self._recorded_at

    def recall(self, idempotency_key: str) -> AppendResult | None:
        """The append recorded under `idempotency_key`, replayed, or None if it is new."""
        recorded = self._recorded(idempotency_key)
        return None if recorded is None else replayed(recorded)

    def append(self, writes: Sequence[StreamWrite], *, actor: str, correlation_id: str | None = None,
               idempotency_key: str | None = None, result: bytes | None = None, principal: str = LOCAL,
               ) -> AppendResult:
        """Check every stream against its expected version, then store the events at the
        positions after the head, all with this transaction's timestamp, and run the hooks.
        Each event's envelope names `actor` (the client's own name) and `principal` (who was
        authenticated).

        With an `idempotency_key` seen before, nothing is written and the first append's
        result is returned (`replayed=True`); `result` is opaque bytes kept with the key.

        Raises:
            ConcurrencyError: If a stream is not at the version its write expects.
            IdempotencyConflictError: If the key was used for different writes.
            ValueError: If `principal` is no principal name (see `codec.check_principal`).
        """
        check_principal(principal)
        fingerprint = b""
        if idempotency_key is not None:
            fingerprint = fingerprint_of(self.codec.encode_event, writes)
            recorded = self._recorded(idempotency_key)
            if recorded is not None:
                if recorded.fingerprint != fingerprint:
                    raise IdempotencyConflictError(idempotency_key)
                return replayed(recorded)
        if writes:
            self._prepare(writes)
        head = position = self.head()
        recorded_at = self.recorded_at
        correlation = correlation_id or os.urandom(16).hex()
        encode, schema_of = self.codec.encode, self.codec.schema_of
        versions: dict[str, int] = {}
        envelopes: list[Envelope] = []
        rows: list[Row] = []
        for write in writes:
            current = versions.get(write.stream)
            if current is None:
                current = self.stream_version(write.stream)
            check_expected(write.stream, write.expected, current)
            for event in write.events:
                position += 1
                current += 1
                envelope = Envelope(position, write.stream, current, recorded_at, schema_of(event),
                                    actor, correlation, idempotency_key, event, principal)
                stored = encode(envelope)
                rows.append((position, write.stream, current, recorded_at, checksums.digest(stored), stored))
                envelopes.append(envelope)
            versions[write.stream] = current
        if rows:
            self._store(rows, versions, writes)
        if idempotency_key is not None:
            record = Recorded(fingerprint, head + 1, position, versions, result)
            self._remember(idempotency_key, _encoder.encode(record), new=True)
        if envelopes:
            transaction = cast("LogTransaction", self)  # a backend's transaction is one
            for hook in self._hooks:
                hook(transaction, envelopes)
        return AppendResult(head + 1, position, versions, result=result)

    def attach_result(self, idempotency_key: str, result: bytes) -> None:
        """Keep `result` with the append recorded under `idempotency_key` in this transaction.

        For callers whose result depends on what the append stored (versions, times).

        Raises:
            KeyError: If no append was recorded under the key.
        """
        recorded = self._recorded(idempotency_key)
        if recorded is None:
            raise KeyError(idempotency_key)
        updated = Recorded(recorded.fingerprint, recorded.first_position, recorded.last_position,
                           recorded.versions, result)
        self._remember(idempotency_key, _encoder.encode(updated), new=False)

    def restore(self, envelopes: Sequence[Envelope], stored: Sequence[bytes] | None = None) -> None:
        """Append `envelopes` exactly as they are, continuing the log and their streams (a copy);
        with `stored`, their bytes as the other log stores them, kept as they are.

        Raises:
            StoreCorruptError: If one does not continue the log or its stream.
        """
        if not envelopes:
            return
        versions = check_continuation(envelopes, self.head(), self._versions_of({e.stream for e in envelopes}))
        rows: list[Row] = []
        for index, envelope in enumerate(envelopes):
            data = self.codec.encode(envelope) if stored is None else stored[index]
            rows.append((envelope.position, envelope.stream, envelope.version, envelope.recorded_at,
                         checksums.digest(data), data))
        self._store_copy(rows, versions)

    def erase(self, streams: Mapping[str, str], redact: Callable[[Envelope], Event | None],
              quoted: Sequence[bytes] = ()) -> list[Envelope]:
        """Replace the events of each stream (old id -> new id, the same to keep it) by
        `redact(envelope)` in place (None keeps an event of a stream that stays), then run the
        erase hooks; return the originals erased, oldest first (see `EventLog.erase`).

        Raises:
            StoreCorruptError: If a stream's events cannot be read.
            ValueError: If `redact` keeps an event of a stream that moves.
        """
        originals = sorted(self._erase(streams, redact, quoted), key=lambda envelope: envelope.position)
        if originals:
            transaction = cast("LogTransaction", self)
            for hook in self._erase_hooks:
                hook(transaction, originals)
        return originals

    def _versions_of(self, streams: set[str]) -> dict[str, int]:
        """The current version of each of `streams`."""
        return {stream: self.stream_version(stream) for stream in streams}
