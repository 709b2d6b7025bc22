"""Appends inside one LMDB write transaction: the rows `Appender` decided, stored in the
log, its checksums, the stream index (and the heads of a store that keeps them); and erasures, through `erase`."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

from chronograph.eventstore import checksums
from chronograph.eventstore.codec import Codec, Envelope
from chronograph.eventstore.errors import StoreCorruptError, advised_copy
from chronograph.eventstore.events import Event
from chronograph.eventstore.keys import pack_u64, text_key
from chronograph.eventstore.lmdb import erase as lmdberase
from chronograph.eventstore.lmdb.reader import ERASURES, SCRUBBED, Databases, LmdbReader
from chronograph.eventstore.log import EraseHook, InlineHook
from chronograph.eventstore.writes import Appender, Recorded, Row, StreamWrite, recorded_decoder

if TYPE_CHECKING:
    import lmdb

__all__ = ["LmdbTransaction"]


class LmdbTransaction(LmdbReader, Appender):
    """A write transaction: everything appended in it commits together or not at all."""

    __slots__ = ("_hooks", "_erase_hooks", "_recorded_at", "_check_room", "_versions")

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
        self._versions: dict[str, int] = {}
        """stream -> its version, as read or written in this transaction: a command reads a
        stream's version to decide, and the append reads it again to check; only this
        transaction can change it meanwhile (`_store` and `_erase` keep this current)"""

    def stream_version(self, stream: str) -> int:
        version = self._versions.get(stream)
        if version is None:
            version = self._versions[stream] = super().stream_version(stream)
        return version

    def _prepare(self, writes: Sequence[StreamWrite]) -> None:
        if self._check_room is not None:
            self._check_room()

    def _store(self, rows: list[Row], versions: dict[str, int], writes: Sequence[StreamWrite]) -> None:
        txn, dbs, key, index = self.txn, self.dbs, self.dbs.key, self.dbs.layout
        index.check(max(versions.values()), rows[-1][0])  # before anything is written
        with txn.cursor(dbs.log) as cursor:
            if cursor.putmulti([(pack_u64(row[0]), row[5]) for row in rows], append=True)[1] != len(rows):
                raise AssertionError(f"log positions after {rows[0][0] - 1} were already taken")
        if dbs.sums is not None:
            checksums.record(txn, dbs.sums, rows[0][0], [row[4] for row in rows])
        with txn.cursor(dbs.streams) as cursor:  # a version already indexed: the heads said less than the truth
            if cursor.putmulti([(index.key(key(row[1]), row[2]), index.value(row[0])) for row in rows],
                               overwrite=False)[1] != len(rows):
                raise StoreCorruptError(
                    "the stream heads are damaged (a stream's head is below a version it already has); nothing "
                    f"was written; restore from a backup, or copy the log into a new store ({advised_copy(dbs.where)})"
                )
        if dbs.heads is not None:
            with txn.cursor(dbs.heads) as cursor:
                cursor.putmulti([(key(stream), pack_u64(v)) for stream, v in versions.items()])
        known = self._versions
        for stream, version in versions.items():
            if stream in known:  # those not asked for are read from the index if they are
                known[stream] = version

    def _store_copy(self, rows: list[Row], versions: dict[str, int]) -> None:
        if self._check_room is not None:
            self._check_room()
        self._store(rows, versions, ())

    def _recorded(self, idempotency_key: str) -> Recorded | None:
        value = self.txn.get(text_key(idempotency_key), db=self.dbs.idempotency)
        return None if value is None else recorded_decoder.decode(value)

    def _remember(self, idempotency_key: str, record: bytes, *, new: bool) -> None:
        self.txn.put(text_key(idempotency_key), record, db=self.dbs.idempotency)

    def _erase(self, streams: Mapping[str, str], redact: Callable[[Envelope], Event | None],
               quoted: Sequence[bytes]) -> list[Envelope]:
        try:
            return lmdberase.erase(self, streams, redact, quoted)
        finally:
            self._versions.clear()  # streams moved: their versions are read from the index again

    def rewrite(self, position: int, event: Event) -> Envelope:
        """See `LogTransaction.rewrite` (in the LMDB log: `erase.rewrite`)."""
        return lmdberase.rewrite(self, position, event)

    def restore_records(self, records: Sequence[tuple[bytes, bytes]], erasures: int, *, clean: bool = True) -> None:
        """Keep idempotency `records` (key, record, as stored) and the count of erasures (a copy;
        see `LogTransaction.restore_records` for `clean`)."""
        with self.txn.cursor(self.dbs.idempotency) as cursor:
            cursor.putmulti(list(records))
        if erasures:
            if clean and self.erasures() == self.scrubbed_through():  # nothing of its own to scrub: nor of the copy's
                self.txn.put(SCRUBBED, pack_u64(erasures), db=self.dbs.meta)
            self.txn.put(ERASURES, pack_u64(erasures), db=self.dbs.meta)
