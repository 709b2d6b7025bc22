"""Reads of the LMDB log inside one transaction: a consistent snapshot of the store."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from typing import NamedTuple

import lmdb
import msgspec
from chronograph.eventstore import checksums
from chronograph.eventstore.codec import Codec, Envelope
from chronograph.eventstore.errors import StoreCorruptError, advised, advised_copy
from chronograph.eventstore.keys import Stored, pack_u64, stream_key, unpack_u64
from chronograph.eventstore.lmdb.streamindex import NARROW, IndexLayout

__all__ = ["ERASURES", "SCRUBBED", "Databases", "LmdbReader"]

ERASURES = b"erasures"
"""The `meta` key counting erasures: caches of the log's content compare it to know they
hold nothing forgotten since they were filled."""
SCRUBBED = b"scrubbed through"
"""The `meta` key holding the erasure count the file was last wholly scrubbed at: below
`ERASURES` when a process died between an erasure's commit and its scrub."""


class Databases(NamedTuple):
    """The named LMDB databases of the log."""

    log: lmdb._Database
    """position (u64 BE) -> envelope"""
    streams: lmdb._Database
    """stream key + version -> position, both big-endian of `layout`'s sizes"""
    heads: lmdb._Database | None
    """stream key -> current version (u64 BE), in the stores of formats 1 to 3; a stream's last
    key in `streams` says it in the others (see `log.FORMAT_VERSION`)"""
    idempotency: lmdb._Database
    """idempotency key -> recorded append"""
    meta: lmdb._Database
    """format version and store identity"""
    sums: lmdb._Database | None
    """pages of envelope checksums (see `checksums`); absent in a read-only store that never had them"""
    key: Callable[[str], bytes] = stream_key
    """a stream's key in `streams` and `heads`: `stream_key` since store format 3, its text
    (`text_key`) in the stores of format 1 and 2 (see `log.FORMAT_VERSION`)"""
    where: str = ""
    """the store's folder, for the commands its errors advise"""
    layout: IndexLayout = NARROW
    """the sizes of a version and a position in `streams`: `NARROW` since store format 6, `WIDE`
    in the stores of format 1 to 5 (see `log.FORMAT_VERSION`)"""


class LmdbReader:
    """Read access to the log within one LMDB transaction (read-only or write)."""

    __slots__ = ("txn", "codec", "dbs")

    def __init__(self, txn: lmdb.Transaction, codec: Codec, dbs: Databases) -> None:
        self.txn = txn
        self.codec = codec
        self.dbs = dbs

    def head(self) -> int:
        """The position of the last event in the log (0 when the log is empty)."""
        with self.txn.cursor(self.dbs.log) as cursor:
            return unpack_u64(cursor.key()) if cursor.last() else 0

    def stream_version(self, stream: str) -> int:
        """The current version of `stream` (0 when it has no events)."""
        prefix = self.dbs.key(stream)
        if self.dbs.heads is not None:
            value = self.txn.get(prefix, db=self.dbs.heads)
            return 0 if value is None else unpack_u64(value)
        size, index = len(prefix), self.dbs.layout
        with self.txn.cursor(self.dbs.streams) as cursor:
            end = index.key(prefix, index.last_version)
            if cursor.set_range(end):
                if cursor.key() == end:
                    return index.last_version
                found = cursor.prev()
            else:
                found = cursor.last()
            while found:  # back over the keys that share the prefix: the stream's, the newest first
                key = cursor.key()
                if key[:size] != prefix:
                    break
                if len(key) == size + index.version_bytes:  # not a longer stream key that begins with this one
                    return index.version(key, size)
                found = cursor.prev()
        return 0

    def get(self, position: int) -> Envelope | None:
        """The envelope at `position`, or None if there is none."""
        value = self.txn.get(pack_u64(position), db=self.dbs.log)
        return None if value is None else self._decode(value, position)

    def verify(self, from_position: int = 1, to_position: int | None = None, batch_size: int = 4096) -> Iterator[int]:
        """Positions in the range whose stored bytes do not match their checksum, or that
        cannot be decoded at all (the stored envelope is damaged)."""
        head = self.head()
        last = head if to_position is None else min(to_position, head)
        for start in range(max(from_position, 1), last + 1, batch_size):
            positions = list(range(start, min(start + batch_size, last + 1)))
            values = [self.txn.get(pack_u64(p), db=self.dbs.log) for p in positions]
            sums = [0] * len(positions) if self.dbs.sums is None else checksums.read(
                self.txn, self.dbs.sums, positions[0], len(positions))
            for position, value, stored in zip(positions, values, sums, strict=True):
                if value is None or (stored and checksums.digest(value) != stored):
                    yield position
                    continue
                try:
                    self.codec.decode(value)
                except Exception:  # noqa: BLE001 (any failure to read it back is damage)
                    yield position

    def stream(
        self, stream: str, from_version: int = 1, to_version: int | None = None
    ) -> Iterator[Envelope]:
        """The events of `stream` from `from_version` to `to_version` (inclusive), in order.

        Raises:
            StoreCorruptError: If the stream index misses a version, or points at another event.
        """
        prefix, index = self.dbs.key(stream), self.dbs.layout
        width, size = len(prefix), len(prefix) + index.version_bytes
        last = to_version if to_version is not None else index.last_version
        expected = max(from_version, 1)
        if expected > index.last_version:
            return
        log, get = self.dbs.log, self.txn.get
        with self.txn.cursor(self.dbs.streams) as cursor:
            found = cursor.set_range(index.key(prefix, expected))
            for key, value in cursor if found else ():
                if len(key) != size or key[:width] != prefix:
                    break
                version = index.version(key, width)
                if version > last:
                    break
                if version != expected:
                    raise self._missing(stream, expected)
                position = index.position(value)
                yield self._indexed(stream, version, self._decode(get(pack_u64(position), db=log), position))
                expected += 1
        if expected <= last and expected <= self.stream_version(stream):  # it ended short of its head
            raise self._missing(stream, expected)

    def positions(self, stream: str) -> list[int]:
        """The log position of each version of `stream`, version 1 first (nothing is decoded).

        Raises:
            StoreCorruptError: If the stream index misses a version.
        """
        prefix, index = self.dbs.key(stream), self.dbs.layout
        width, size = len(prefix), len(prefix) + index.version_bytes
        found: list[int] = []
        with self.txn.cursor(self.dbs.streams) as cursor:
            if cursor.set_range(index.key(prefix, 1)):
                for key, value in cursor:
                    if len(key) != size or key[:width] != prefix:
                        break
                    if index.version(key, width) != len(found) + 1:
                        raise self._missing(stream, len(found) + 1)
                    found.append(index.position(value))
        if len(found) != self.stream_version(stream):
            raise self._missing(stream, len(found) + 1)
        return found

    def positions_of(self, streams: Sequence[str]) -> list[int]:
        """The log position of every event of `streams`, lowest first (raising as `positions` does)."""
        return sorted({position for stream in streams for position in self.positions(stream)})

    def stream_backward(self, stream: str, from_version: int | None = None) -> Iterator[Envelope]:
        """The events of `stream` from `from_version` (default: its newest) down to version 1.

        Raises:
            StoreCorruptError: If the stream index misses a version, or points at another event.
        """
        prefix, index = self.dbs.key(stream), self.dbs.layout
        width, size = len(prefix), len(prefix) + index.version_bytes
        top = self.stream_version(stream) if from_version is None else min(from_version, self.stream_version(stream))
        if top < 1:
            return
        log, get = self.dbs.log, self.txn.get
        expected = top
        with self.txn.cursor(self.dbs.streams) as cursor:
            if not cursor.set_key(index.key(prefix, top)):
                raise self._missing(stream, top)
            for key, value in cursor.iterprev():
                if len(key) != size or key[:width] != prefix:
                    break
                version = index.version(key, width)
                if version != expected:
                    raise self._missing(stream, expected)
                position = index.position(value)
                yield self._indexed(stream, version, self._decode(get(pack_u64(position), db=log), position))
                expected -= 1
        if expected:
            raise self._missing(stream, expected)

    def batches(
        self,
        from_position: int = 1,
        to_position: int | None = None,
        batch_size: int = 1024,
        *,
        slim: bool = False,
    ) -> Iterator[list[Envelope]]:
        """The log from `from_position` to `to_position` (inclusive), decoded in batches.

        With `slim`, envelopes come without actor, correlation id and idempotency key
        (`SlimEnvelope`): enough to fold, and faster.
        """
        head = self.head()
        last = head if to_position is None else min(to_position, head)
        first = max(from_position, 1)
        if first > last:
            return
        remaining = last - first + 1  # positions are gap-free: no key needs comparing
        values: list[Stored] = []
        start = first
        with self.txn.cursor(self.dbs.log) as cursor:
            if not cursor.set_key(pack_u64(first)):
                raise StoreCorruptError(f"the log has no event at position {first} (head {head})")
            for value in cursor.iternext(keys=False, values=True):
                values.append(value)
                remaining -= 1
                if len(values) == batch_size or not remaining:
                    yield self._decode_many(range(start, start + len(values)), values, slim)
                    start += len(values)
                    values = []
                    if not remaining:
                        return
        if values:  # the log ended early: a damaged store; give what there is
            yield self._decode_many(range(start, start + len(values)), values, slim)

    def batches_backward(
        self, from_position: int | None = None, to_position: int = 1, batch_size: int = 256
    ) -> Iterator[list[Envelope]]:
        """The log from `from_position` (default: the head) down to `to_position`, newest first."""
        if from_position is not None and from_position < to_position:
            return
        values: list[Stored] = []
        positions: list[int] = []
        with self.txn.cursor(self.dbs.log) as cursor:
            found = cursor.last() if from_position is None else cursor.set_range(pack_u64(from_position))
            if from_position is not None:
                if not found:
                    found = cursor.last()
                elif unpack_u64(cursor.key()) > from_position:
                    found = cursor.prev()
            if not found:
                return
            low = pack_u64(max(to_position, 1))
            for key, value in cursor.iterprev():
                if bytes(key) < low:
                    break
                values.append(value)
                positions.append(unpack_u64(key))
                if len(values) == batch_size:
                    yield self._decode_many(positions, values, False)
                    values, positions = [], []
        if values:
            yield self._decode_many(positions, values, False)

    def index_problems(self) -> Iterator[str]:
        """Where the stream index disagrees with the log: an event whose (stream, version) key is
        missing or points at another position, keys no event has, and a stream head (the stores
        that keep them) below the stream's last version. A store without heads finds a stream's
        version in the index alone, so a lost key there would let a write reuse a version."""
        streams, get, key, index = self.dbs.streams, self.txn.get, self.dbs.key, self.dbs.layout
        head, last = self.head(), {}
        for envelope in self.all(1, head, 4096):
            if not 0 < envelope.version <= index.last_version:  # damage its checksum, if any, missed
                yield (f"index: the event at position {envelope.position:,} claims version {envelope.version:,}, "
                       "which this store's index cannot hold")
                continue
            at = get(index.key(key(envelope.stream), envelope.version), db=streams)
            pointed = None if at is None or len(at) != index.position_bytes else index.position(at)
            if pointed != envelope.position:
                where = ("no key" if at is None else f"a key that points at position {pointed:,}" if pointed is not None
                         else f"a key whose value is {len(at)} bytes, not a position")
                yield (f"index: the event at position {envelope.position:,} (version {envelope.version} of its "
                       f"stream) has {where}")
            if self.dbs.heads is not None:
                last[envelope.stream] = envelope.version
        extra = self.txn.stat(streams)["entries"] - head
        if extra > 0:
            yield f"index: it holds {extra:,} key(s) more than the log has events"
        for stream, version in last.items():
            if (said := self.stream_version(stream)) < version:
                yield f"index: a stream's head says version {said}, its events reach {version}"

    def all(
        self, from_position: int = 1, to_position: int | None = None, batch_size: int = 1024
    ) -> Iterator[Envelope]:
        """Every event from `from_position` to `to_position`, one at a time, never all in memory."""
        for batch in self.batches(from_position, to_position, batch_size):
            yield from batch

    def position_at(self, recorded_at: int) -> int:
        """The last position recorded at or before `recorded_at` (µs), 0 if none.

        A binary search: recorded_at never decreases along the log. Each event it reads is checked
        against its checksum (a flipped byte in a time would send it the wrong way).
        """
        low, high = 1, self.head()
        found = 0
        log, get, codec = self.dbs.log, self.txn.get, self.codec
        while low <= high:
            middle = (low + high) // 2
            stored = self._stored(get(pack_u64(middle), db=log), middle)
            self._check([middle], [stored])
            if codec.recorded_at(stored) <= recorded_at:
                found, low = middle, middle + 1
            else:
                high = middle - 1
        return found

    def mentions(self, needles: Sequence[bytes], from_position: int = 1) -> Iterator[Envelope]:
        """The events from `from_position` on whose stored bytes contain one of `needles`,
        oldest first: a scan of the raw log that decodes only what it finds. Every event scanned
        is checked against its checksum, found or not: a flipped byte where a needle was is
        damage, never read as the needle's absence.

        Raises:
            StoreCorruptError: Naming the first damaged event scanned.
        """
        if not needles:
            return
        found = re.compile(b"|".join(re.escape(needle) for needle in needles)).search
        with self.txn.cursor(self.dbs.log) as cursor:
            if not cursor.set_range(pack_u64(max(from_position, 1))):
                return
            first = unpack_u64(cursor.key())
            chunk: list[bytes] = []
            for key, value in cursor.iternext():
                if unpack_u64(key) != first + len(chunk):
                    raise StoreCorruptError(f"the log has no event at position {first + len(chunk)}: the store "
                                            f"is damaged there; {advised('replay --verify', self.dbs.where)} lists "
                                            "every damaged position; restore from a backup")
                chunk.append(bytes(value))
                if len(chunk) == checksums.PAGE:
                    yield from self._holding(found, first, chunk)
                    first, chunk = first + len(chunk), []
            yield from self._holding(found, first, chunk)

    def _holding(self, found: Callable[[bytes], object], first: int, chunk: list[bytes]) -> Iterator[Envelope]:
        self._check(range(first, first + len(chunk)), chunk)
        for offset, value in enumerate(chunk):
            if found(value):
                yield self._decode(value, first + offset)

    def stored(self, from_position: int, to_position: int) -> list[bytes]:
        """The stored bytes of the events in the range, oldest first, checked against their
        checksums (a copy or a backup never carries damage on under new ones).

        Raises:
            StoreCorruptError: Naming the first event whose bytes fail their checksum.
        """
        out: list[bytes] = []
        with self.txn.cursor(self.dbs.log) as cursor:
            if cursor.set_key(pack_u64(from_position)):
                for key, value in cursor:
                    if unpack_u64(key) > to_position:
                        break
                    out.append(bytes(value))
        self._check(range(from_position, from_position + len(out)), out)
        return out

    def idempotency_records(self) -> Iterator[tuple[bytes, bytes]]:
        """Every idempotency key the log remembers (as stored) and its stored record."""
        with self.txn.cursor(self.dbs.idempotency) as cursor:
            for key, value in cursor:
                yield bytes(key), bytes(value)

    def erasures(self) -> int:
        """How many times content was erased from this log (forgetting); 0 if never."""
        value = self.txn.get(ERASURES, db=self.dbs.meta)
        return 0 if value is None else unpack_u64(value)

    def scrubbed_through(self) -> int:
        """The erasure count the store's file was last wholly scrubbed at (0: never)."""
        value = self.txn.get(SCRUBBED, db=self.dbs.meta)
        return 0 if value is None else unpack_u64(value)

    def last_recorded_at(self) -> int:
        """The timestamp of the newest event (0 when the log is empty), its checksum checked."""
        with self.txn.cursor(self.dbs.log) as cursor:
            if not cursor.last():
                return 0
            position, stored = unpack_u64(cursor.key()), bytes(cursor.value())
        self._check([position], [stored])
        return self.codec.recorded_at(stored)

    def _missing(self, stream: str, version: int) -> StoreCorruptError:
        return StoreCorruptError(
            f"the stream index is damaged: it has no version {version} of {stream!r}; restore from a backup, or "
            f"copy the log into a new store ({advised_copy(self.dbs.where)}) to rebuild its indexes"
        )

    def _indexed(self, stream: str, version: int, envelope: Envelope) -> Envelope:
        """`envelope`, found through the stream index as `version` of `stream`: it must be that."""
        if envelope.stream != stream or envelope.version != version:
            raise StoreCorruptError(
                f"the stream index is damaged: version {version} of {stream!r} points at position "
                f"{envelope.position}, which holds version {envelope.version} of {envelope.stream!r}; restore "
                f"from a backup, or copy the log into a new store ({advised_copy(self.dbs.where)}) to rebuild its "
                "indexes"
            )
        return envelope

    def _stored(self, value: Stored | None, position: int) -> Stored:
        if value is None:
            raise StoreCorruptError(f"the log has no event at position {position}, which an index points at")
        return value

    def _check(self, positions: Sequence[int], values: Sequence[Stored]) -> None:
        """Raise StoreCorruptError naming the first position whose bytes fail their checksum."""
        if self.dbs.sums is None or not positions:
            return
        if isinstance(positions, range):
            stored = checksums.read(self.txn, self.dbs.sums, positions.start, len(positions))
        else:
            stored = [checksums.read(self.txn, self.dbs.sums, p, 1)[0] for p in positions]
        computed = [checksums.digest(value) for value in values]
        if computed == stored:
            return
        for position, mine, theirs in zip(positions, computed, stored, strict=True):
            if theirs and mine != theirs:
                raise StoreCorruptError(
                    f"the event at position {position} does not match its checksum: the store is damaged "
                    f"there; {advised('replay --verify', self.dbs.where)} lists every damaged position; restore from "
                    "a backup"
                )

    def _decode(self, value: Stored | None, position: int) -> Envelope:
        stored = self._stored(value, position)
        self._check([position], [stored])
        try:
            return self.codec.decode(stored)
        except msgspec.DecodeError as error:
            raise StoreCorruptError(f"the event at position {position} is unreadable: {error}") from None

    def _decode_many(self, positions: Sequence[int], values: list[Stored], slim: bool) -> list[Envelope]:
        self._check(positions, values)
        try:
            return self.codec.decode_many(values, slim=slim)
        except msgspec.DecodeError as error:
            raise StoreCorruptError(f"an event in the log is unreadable: {error}") from None
