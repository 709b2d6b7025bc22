"""Appends inside one LMDB write transaction: versions checked, positions assigned, hooks run."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

import msgspec
from chronograph.eventstore import checksums, clock, lmdberase
from chronograph.eventstore.codec import Codec, Envelope
from chronograph.eventstore.errors import IdempotencyConflictError
from chronograph.eventstore.events import Event
from chronograph.eventstore.keys import pack_u64, text_key, unpack_u64
from chronograph.eventstore.lmdbreader import ERASURES, Databases, LmdbReader
from chronograph.eventstore.log import EraseHook, InlineHook
from chronograph.eventstore.writes import (
    AppendResult,
    Recorded,
    StreamWrite,
    check_continuation,
    check_expected,
    fingerprint_of,
    recorded_decoder,
    replayed,
)

if TYPE_CHECKING:
    import lmdb

__all__ = ["LmdbTransaction"]


_encoder = msgspec.msgpack.Encoder()


class LmdbTransaction(LmdbReader):
    """A write transaction: everything appended in it commits together or not at all."""

    __slots__ = ("_hooks", "_erase_hooks", "_recorded_at", "_check_room")

    def __init__(
        self,
        txn: lmdb.Transaction,
        codec: Codec,
        dbs: Databases,
        hooks: Sequence[InlineHook],
        check_room: Callable[[], None] | None = None,
        erase_hooks: Sequence[EraseHook] = (),
    ) -> None:
        super().__init__(txn, codec, dbs)
        self._hooks = hooks
        self._erase_hooks = erase_hooks
        self._recorded_at: int | None = None
        self._check_room = check_room

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

    def append(
        self,
        writes: Sequence[StreamWrite],
        *,
        actor: str,
        correlation_id: str | None = None,
        idempotency_key: str | None = None,
        result: bytes | None = None,
    ) -> AppendResult:
        """Append events to one or more streams, checking each stream's expected version.

        With an `idempotency_key` seen before, nothing is written and the first append's
        result is returned (`replayed=True`); `result` is opaque bytes kept with the key.

        Raises:
            ConcurrencyError: If a stream is not at the version its write expects.
            IdempotencyConflictError: If the key was used for different writes.
        """
        fingerprint = b""
        if idempotency_key is not None:
            fingerprint = fingerprint_of(self.codec.encode_event, writes)
            recorded = self._recorded(idempotency_key)
            if recorded is not None:
                if recorded.fingerprint != fingerprint:
                    raise IdempotencyConflictError(idempotency_key)
                return replayed(recorded)

        if writes and self._check_room is not None:
            self._check_room()
        txn, dbs, codec = self.txn, self.dbs, self.codec
        head = self.head()
        recorded_at = self.recorded_at
        correlation = correlation_id or os.urandom(16).hex()
        versions: dict[str, int] = {}
        envelopes: list[Envelope] = []
        log_rows: list[tuple[bytes, bytes]] = []
        digests: list[int] = []
        index_rows: list[tuple[bytes, bytes]] = []
        encode, schema_of = codec.encode, codec.schema_of
        position = head
        for write in writes:
            stream_key = text_key(write.stream)
            current = versions.get(write.stream)
            if current is None:
                stored = txn.get(stream_key, db=dbs.heads)
                current = 0 if stored is None else unpack_u64(stored)
            check_expected(write.stream, write.expected, current)
            for event in write.events:
                position += 1
                current += 1
                envelope = Envelope(
                    position, write.stream, current, recorded_at, schema_of(event),
                    actor, correlation, idempotency_key, event,
                )
                key = pack_u64(position)
                stored = encode(envelope)
                log_rows.append((key, stored))
                digests.append(checksums.digest(stored))
                index_rows.append((stream_key + pack_u64(current), key))
                envelopes.append(envelope)
            versions[write.stream] = current
        if log_rows:
            with txn.cursor(dbs.log) as cursor:
                if cursor.putmulti(log_rows, append=True)[1] != len(log_rows):
                    raise AssertionError(f"log positions after {head} were already taken")
            if dbs.sums is not None:
                checksums.record(txn, dbs.sums, head + 1, digests)
            with txn.cursor(dbs.streams) as cursor:
                cursor.putmulti(index_rows)
            with txn.cursor(dbs.heads) as cursor:
                cursor.putmulti([(text_key(stream), pack_u64(v)) for stream, v in versions.items()])

        if idempotency_key is not None:
            record = Recorded(fingerprint, head + 1, position, versions, result)
            txn.put(_idempotency_key(idempotency_key), _encoder.encode(record), db=dbs.idempotency)
        if envelopes:
            for hook in self._hooks:
                hook(self, envelopes)
        return AppendResult(head + 1, position, versions, result=result)

    def erase(self, streams: Mapping[str, str], redact: Callable[[Envelope], Event]) -> list[Envelope]:
        """Replace every event of each stream (old id -> new id, the same to keep it) by
        `redact(envelope)` in place, then run the erase hooks; return the originals, oldest first.

        Raises:
            StoreCorruptError: If a stream's events cannot be read.
        """
        originals = lmdberase.erase(self, streams, redact)
        if originals:
            for hook in self._erase_hooks:
                hook(self, originals)
        return originals

    def rewrite(self, position: int, event: Event) -> Envelope:
        """Replace the event at `position` by `event`, its envelope kept; return the original.

        Raises:
            StoreCorruptError: If there is no event at `position`.
        """
        return lmdberase.rewrite(self, position, event)

    def restore(self, envelopes: Sequence[Envelope]) -> None:
        """Append `envelopes` exactly as they are, continuing the log and their streams (a copy).

        Raises:
            StoreCorruptError: If one does not continue the log or its stream.
        """
        if not envelopes:
            return
        txn, dbs = self.txn, self.dbs
        head = self.head()
        versions = check_continuation(envelopes, head, {e.stream: self.stream_version(e.stream) for e in envelopes})
        rows, digests, index = [], [], []
        for envelope in envelopes:
            stored = self.codec.encode(envelope)
            rows.append((pack_u64(envelope.position), stored))
            digests.append(checksums.digest(stored))
            index.append((text_key(envelope.stream) + pack_u64(envelope.version), pack_u64(envelope.position)))
        if self._check_room is not None:
            self._check_room()
        with txn.cursor(dbs.log) as cursor:
            cursor.putmulti(rows, append=True)
        if dbs.sums is not None:
            checksums.record(txn, dbs.sums, head + 1, digests)
        with txn.cursor(dbs.streams) as cursor:
            cursor.putmulti(index)
        with txn.cursor(dbs.heads) as cursor:
            cursor.putmulti([(text_key(stream), pack_u64(v)) for stream, v in versions.items()])

    def restore_records(self, records: Sequence[tuple[bytes, bytes]], erasures: int) -> None:
        """Keep idempotency `records` (key, record, as stored) and the count of erasures (a copy)."""
        with self.txn.cursor(self.dbs.idempotency) as cursor:
            cursor.putmulti(list(records))
        if erasures:
            self.txn.put(ERASURES, pack_u64(erasures), db=self.dbs.meta)

    def attach_result(self, idempotency_key: str, result: bytes) -> None:
        """Keep `result` with the append recorded under `idempotency_key` in this transaction.

        For callers whose result depends on what the append stored (versions, times).

        Raises:
            KeyError: If no append was recorded under the key.
        """
        recorded = self._recorded(idempotency_key)
        if recorded is None:
            raise KeyError(idempotency_key)
        updated = Recorded(
            recorded.fingerprint, recorded.first_position, recorded.last_position,
            recorded.versions, result,
        )
        self.txn.put(_idempotency_key(idempotency_key), _encoder.encode(updated), db=self.dbs.idempotency)

    def _recorded(self, idempotency_key: str) -> Recorded | None:
        value = self.txn.get(_idempotency_key(idempotency_key), db=self.dbs.idempotency)
        return None if value is None else recorded_decoder.decode(value)


def _idempotency_key(key: str) -> bytes:
    return text_key(key)
