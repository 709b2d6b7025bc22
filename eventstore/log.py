"""What every backend of the log does: the contract the views, time travel and the core rely on.

A log appends events to streams, each guarded by the version its writer expects, all
of one append or none; it remembers idempotency keys; it reads back by position, by
stream and by time, from one consistent snapshot; and it lets a reader in another
process wait for what is appended after the position it has seen. The LMDB log
(`LmdbLog`) is the first backend; every backend passes the same contract tests
(`tests/eventstore/test_log_contract.py`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import NamedTuple, Protocol, Self, TypeVar

from chronograph.eventstore.codec import Codec, Envelope
from chronograph.eventstore.events import Event
from chronograph.eventstore.writes import AppendResult, StreamWrite

__all__ = ["EraseHook", "EventLog", "InlineHook", "LogReader", "LogTransaction", "Scrubbed"]

T = TypeVar("T")


class Scrubbed(NamedTuple):
    """What a scrub of the storage did."""

    zeroed: int
    """Units of storage (LMDB: pages) that held old bytes and were overwritten."""
    held: int
    """Units left alone because a reader might still see them (a later scrub gets them)."""
    unreached: str = ""
    """What the scrub could not overwrite for want of a right, and who can (empty: nothing)."""


class LogReader(Protocol):
    """Reads of the log inside one consistent snapshot."""

    def head(self) -> int:
        """The position of the last event (0 when the log is empty)."""
        ...

    def stream_version(self, stream: str) -> int:
        """The current version of `stream` (0 when it has no events)."""
        ...

    def get(self, position: int) -> Envelope | None:
        """The envelope at `position`, or None."""
        ...

    def stream(self, stream: str, from_version: int = 1, to_version: int | None = None) -> Iterator[Envelope]:
        """The events of `stream` from `from_version` to `to_version` (inclusive), in order."""
        ...

    def positions(self, stream: str) -> list[int]:
        """The log position of each version of `stream`, version 1 first, without decoding events."""
        ...

    def positions_of(self, streams: Sequence[str]) -> list[int]:
        """The log position of every event of `streams`, lowest first (one question of the log)."""
        ...

    def stream_backward(self, stream: str, from_version: int | None = None) -> Iterator[Envelope]:
        """The events of `stream` from `from_version` (default: its newest) down to version 1."""
        ...

    def batches(
        self, from_position: int = 1, to_position: int | None = None, batch_size: int = 1024, *, slim: bool = False
    ) -> Iterator[list[Envelope]]:
        """The log from `from_position` to `to_position` (inclusive), in batches, oldest first.

        With `slim`, envelopes may come without actor, correlation id and idempotency key.
        """
        ...

    def batches_backward(
        self, from_position: int | None = None, to_position: int = 1, batch_size: int = 256
    ) -> Iterator[list[Envelope]]:
        """The log from `from_position` (default: the head) down to `to_position`, newest first."""
        ...

    def all(self, from_position: int = 1, to_position: int | None = None, batch_size: int = 1024) -> Iterator[Envelope]:
        """Every event in the range, one at a time, never all in memory."""
        ...

    def position_at(self, recorded_at: int) -> int:
        """The last position recorded at or before `recorded_at` (µs since epoch), 0 if none."""
        ...

    def last_recorded_at(self) -> int:
        """The timestamp of the newest event (0 when the log is empty)."""
        ...

    def verify(self, from_position: int = 1, to_position: int | None = None) -> Iterator[int]:
        """Positions in the range whose stored events are damaged (fail their checksum, or
        cannot be read back)."""
        ...

    def index_problems(self) -> Iterator[str]:
        """Where the log's index of streams and versions disagrees with its events (none: it
        agrees; a database that enforces the index itself has nothing to say)."""
        ...

    def mentions(self, needles: Sequence[bytes], from_position: int = 1) -> Iterator[Envelope]:
        """The events from `from_position` on whose stored bytes contain one of `needles`
        (a raw scan: what forgetting looks for), oldest first."""
        ...

    def erasures(self) -> int:
        """How many erasures the log has had: a cache of its content filled at another count
        may hold something forgotten since."""
        ...

    def scrubbed_through(self) -> int:
        """The erasure count at the last scrub that finished (`EventLog.scrub`): below `erasures`,
        a process died between an erasure's commit and its scrub, and old bytes may remain."""
        ...

    def stored(self, from_position: int, to_position: int) -> list[bytes]:
        """The stored bytes of the events in the range, oldest first (what a copy checks), each
        checked against its checksum (StoreCorruptError names the first that fails)."""
        ...

    def idempotency_records(self) -> Iterator[tuple[bytes, bytes]]:
        """Every idempotency key the log remembers (as stored) and its stored record."""
        ...


class LogTransaction(LogReader, Protocol):
    """A write transaction: everything appended in it commits together or not at all."""

    @property
    def recorded_at(self) -> int:
        """The timestamp every event appended in this transaction gets (µs; never decreasing)."""
        ...

    def recall(self, idempotency_key: str) -> AppendResult | None:
        """The append recorded under `idempotency_key`, replayed, or None if it is new."""
        ...

    def attach_result(self, idempotency_key: str, result: bytes) -> None:
        """Keep `result` with the append recorded under `idempotency_key`, in place of its own.

        Raises:
            KeyError: If no append was recorded under the key.
        """
        ...

    def append(
        self,
        writes: Sequence[StreamWrite],
        *,
        actor: str,
        correlation_id: str | None = None,
        idempotency_key: str | None = None,
        result: bytes | None = None,
        principal: str = "local",
    ) -> AppendResult:
        """Append to one or more streams, each checked against its expected version; each event's
        envelope names `actor` and `principal` (who was authenticated: `local` in commands).

        Raises:
            ConcurrencyError: If a stream is not at the version its write expects.
            IdempotencyConflictError: If the key was used for different writes.
        """
        ...

    def erase(self, streams: Mapping[str, str], redact: Callable[[Envelope], Event | None],
              quoted: Sequence[bytes] = ()) -> list[Envelope]:
        """Replace the events of each stream (old id -> new id, the same to keep it) by
        `redact(envelope)`, in place, envelopes kept (None keeps an event of a stream that
        stays: a stream another thing took up after); forget the results idempotency keys
        remember of the calls that wrote them, or that quote one of `quoted`; count the
        erasure; run the erase hooks. Return the originals erased, oldest first. The only way
        anything in the log changes.

        Raises:
            ValueError: If `redact` keeps an event of a stream that moves.
        """
        ...

    def rewrite(self, position: int, event: Event) -> Envelope:
        """Replace the event at `position` by `event`, its envelope kept; return the original
        (a reference to a forgotten name in a stream that stays)."""
        ...

    def restore(self, envelopes: Sequence[Envelope], stored: Sequence[bytes] | None = None) -> None:
        """Append `envelopes` exactly as they are (positions, versions, times, actors, calls): a
        copy of another log. They must continue the log and each of their streams. No hook
        runs: views of the copy are built when it is opened. `stored`: their bytes as the other
        log stores them, kept as they are (whatever codec wrote them) instead of encoded again.

        Raises:
            StoreCorruptError: If one does not continue the log or its stream.
        """
        ...

    def restore_records(self, records: Sequence[tuple[bytes, bytes]], erasures: int, *, clean: bool = True) -> None:
        """Keep idempotency `records` (key, record, as another log stores them) and the count
        of erasures, as a copy of another log. `clean`: the log never held what those erasures
        erased, so they count as scrubbed (unless it has a scrub of its own pending); otherwise
        its next scrub (or writable open) scrubs them."""
        ...


InlineHook = Callable[[LogTransaction, Sequence[Envelope]], None]
"""Called inside the write transaction with the envelopes an append just wrote."""

EraseHook = Callable[[LogTransaction, Sequence[Envelope]], None]
"""Called inside the write transaction with the original envelopes an erasure replaced."""


class EventLog(Protocol):
    """A log of events: the one thing every backend provides.

    A backend subclasses it for what every log does the same way on top of `transact`
    and `close` (`append` in a transaction of its own, `with` closing the log).
    """

    codec: Codec

    @property
    def location(self) -> str:
        """Where the log lives, for messages (a path or a database URL without secrets)."""
        ...

    @property
    def readonly(self) -> bool:
        """Whether this process may only read."""
        ...

    def read(self) -> AbstractContextManager[LogReader]:
        """A consistent snapshot of the log for the duration of the `with` block."""
        ...

    def transact(self, work: Callable[[LogTransaction], T]) -> T:
        """Run `work` in one write transaction; commit it, or write nothing if it raises.

        `work` may be run more than once (a retry after the storage grew), so it must
        decide everything from what it reads in the transaction it is given.

        Raises:
            StorageFullError: If there is no room left; nothing is written.
        """
        ...

    def append(self, writes: Sequence[StreamWrite], *, actor: str, correlation_id: str | None = None,
               idempotency_key: str | None = None, principal: str = "local") -> AppendResult:
        """Append in a transaction of its own (see `LogTransaction.append`).

        Raises:
            ConcurrencyError: If a stream is not at its expected version.
            IdempotencyConflictError: If the key was used for different writes.
            StorageFullError: If there is no room left; nothing is written.
            StoreUnavailableError: If the log's database cannot be reached or goes away.
        """

        def work(tx: LogTransaction) -> AppendResult:
            return tx.append(writes, actor=actor, correlation_id=correlation_id, idempotency_key=idempotency_key,
                             principal=principal)

        return self.transact(work)

    def add_inline_hook(self, hook: InlineHook) -> None:
        """Run `hook(tx, envelopes)` inside the write transaction of every append."""
        ...

    def add_erase_hook(self, hook: EraseHook) -> None:
        """Run `hook(tx, originals)` inside the write transaction of every erasure."""
        ...

    def scrub(self, needles: Sequence[bytes] = (), timeout: float = 10.0) -> Scrubbed:
        """Overwrite what erasures left behind in storage (old copies of changed data, and any
        index entry still holding one of `needles`), waiting up to `timeout` seconds for
        readers that may still see them."""
        ...

    def head(self) -> int:
        """The position of the newest event (0 for an empty log)."""
        ...

    def exclusive(self) -> AbstractContextManager[None]:
        """For the `with` block, keep every other process from writing the log (a copy into it):
        this process's transactions go on; another's wait for the block, or it is refused.

        Raises:
            EventStoreError: If another process has the log open and cannot be kept out.
        """
        ...

    def patience(self, seconds: float) -> AbstractContextManager[None]:
        """Within the block, give up on a log out of reach after about `seconds` rather than the
        usual wait (a store that is closing has nothing to wait for); a local log is never out
        of reach."""
        del seconds
        return nullcontext()

    def answering(self, seconds: float) -> AbstractContextManager[None]:
        """Within the block, give up on a database that leaves a request of this thread without
        an answer for `seconds` (a local log always answers)."""
        del seconds
        return nullcontext()

    def unanswered(self) -> float:
        """Seconds the longest silence of a database in a request of this process still waiting
        for its answer has lasted (0.0: none waits; a local log always answers)."""
        return 0.0

    def waiting(self) -> float:
        """Seconds the longest wait of this process for the right to write has lasted so far (0.0:
        none is waiting; a local log's writers take turns among themselves)."""
        return 0.0

    def interrupt(self) -> None:
        """Cut short this process's waits for the right to write, and refuse new ones: the process
        is stopping (a local log's waits end on their own)."""
        return None

    def stored_bytes(self) -> int:
        """What the log takes where it is stored (0 when the backend cannot tell)."""
        ...

    def wait_for_append(self, after: int, timeout: float) -> int:
        """Wait until the head passes `after` (appended by any process) or `timeout` seconds
        pass; return the head. How readers in other processes catch up."""
        ...

    def watch(self, after: int, timeout: float) -> tuple[int, int]:
        """(head, erasure count) once the head passes `after` (appended by any process), or when
        `timeout` seconds pass: what a follower of the log waits on."""
        ...

    def close(self) -> None:
        """Release the log; it cannot be used afterwards."""
        ...

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
