"""What every erasure command shares: its reason, the scrub that follows its commit, and what
its answer says of the copies out of its reach.

Forgetting an entity (`lifecycle/forgetting.py`) and a team entry (`team/forgetting.py`)
erase in the log's one write transaction, with the views' erase hook; once it commits,
the store's files are scrubbed of the old copies (`Memory.scrub`), and the answer says
whether every one of them was overwritten, and which copies beside the store still hold
what was erased (`set_aside`), the same words the tool and `chronograph forget` say.

An erasure whose commit was cut off (the database's answer to it never came) may have landed:
its call is refused as "may or may not have been stored", and its scrub does not run. What
it owes is kept in the process (`Owed`), so that nothing waits for the next opening: a retry
of the same erasure finds it landed and answers as the first call would have, scrubbed
(`unsettled`; with the same requestId, in any process, `settle_after` completes the answer
its commit stored), and the process finishes the scrub at its next write or follower look
(`settle_owed`), as an opening does (`finish_scrubbing`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from contextlib import suppress
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NamedTuple, TypeVar

import lmdb
from chronograph.application.engine.batch import Batch
from chronograph.eventstore import EventStoreError, Scrubbed
from chronograph.eventstore.errors import advised
from chronograph.eventstore.lmdb import staging
from chronograph.eventstore.lmdb.failures import why
from chronograph.eventstore.postgres.address import is_database_url
from msgspec import Meta

if TYPE_CHECKING:
    from chronograph.application.engine.service import Memory

__all__ = ["Owed", "Reason", "Unsettled", "finish_scrubbing", "scrub_after", "scrub_store", "set_aside", "settle_after",
           "settle_owed", "unconfirmed", "unsettled"]

Reason = Annotated[str, Meta(min_length=1, max_length=1024)]
"""Why something is forgotten (kept verbatim in the audit: say why, not what)."""

T = TypeVar("T")

OPEN_SCRUB_WAIT = 2.0
"""Seconds an open that finishes an erasure's scrub waits for another process's readers (those
it cannot wait out are left to the next open)."""
OWED_RETRY = 30.0
"""Seconds before a running process tries again a scrub it owes that failed or readers held back."""
UNSETTLED = 64
"""How many erasures cut off unconfirmed a process keeps the answers of (the oldest go first)."""


class Unsettled(NamedTuple):
    """An erasure whose commit was cut off unconfirmed: where its last event would be, its answer
    before its scrub, and what that scrub repacks (see `scrub_after`)."""

    stream: str
    version: int
    correlation: str
    output: Any
    needles: tuple[bytes, ...]


class Owed:
    """What this process's erasures still owe (kept by the memory, used under its lock): a scrub
    whose commit was cut off or that failed, and the answers of erasures cut off unconfirmed,
    by subject, for their retries (the names they hold were the process's to hold already)."""

    def __init__(self) -> None:
        self.scrub = False
        self.retry_at = 0.0
        self.unsettled: dict[str, Unsettled] = {}


def scrub_after(batch: Batch, needles: Sequence[bytes], finish: Callable[[T, bool, str, list[str]], T],
                subject: str = "") -> None:
    """Once `batch` has committed, scrub the store (databases whose branch keys hold one of
    `needles` are repacked) and complete its answer with `finish(answer, scrubbed, message,
    elsewhere)`: `elsewhere`, what copies out of the store's reach still hold (`set_aside`).
    `subject` names what is erased, for a retry of the erasure if its commit is cut off
    (`unsettled`)."""
    batch.erasing = (subject, tuple(needles))
    batch.then(lambda output: _scrubbed(batch, needles, finish, output))


def _scrubbed(batch: Batch, needles: Sequence[bytes], finish: Callable[[T, bool, str, list[str]], T], output: T) -> T:
    assert batch.scrub is not None, "a command runs in a Memory's batch"
    elsewhere = set_aside(batch.store)
    scrub_command = advised("scrub", batch.store, batch.cache)
    try:
        done = batch.scrub(needles)
    except (EventStoreError, OSError, MemoryError, lmdb.Error) as error:  # the erasure stands: said, not failed
        said = str(error) if isinstance(error, EventStoreError) else why(error) or type(error).__name__
        return finish(output, False, (
            f"Erased from the log and every view, but the store's free pages could not be scrubbed: {said}. "
            f"Run {scrub_command} to finish"), elsewhere)
    if done.held:
        return finish(output, False, (
            f"Erased from the log and every view; {done.held} old copies are still visible to a long reader (an "
            f"open transaction) and keep the old bytes until the next scrub ({scrub_command}, or "
            "the next process that opens the store to write)"), elsewhere)
    if done.unreached:
        return finish(output, False, f"Erased from the log and every view; {done.unreached}", elsewhere)
    return finish(output, True, f"Erased; {done.zeroed} old pages of the store overwritten", elsewhere)


def settle_after(batch: Batch, needles: Sequence[bytes], finish: Callable[[T, bool, str, list[str]], T]) -> None:
    """Once `batch` has committed, complete the answer of an erasure committed before it (whose
    own answer was lost, or stored before its scrub): scrub the store if an erasure's scrub is
    still owed (`scrub_after`'s words), else say it was finished since."""

    def settle(output: T) -> T:
        assert batch.reader is not None, "a command runs in a Memory's batch"
        try:
            with batch.reader() as log:
                owed = log.erasures() > log.scrubbed_through()
        except EventStoreError:  # the scrub then meets it, and says so
            owed = True
        if owed:
            return _scrubbed(batch, needles, finish, output)
        return finish(output, True, "Erased; the scrub that follows it was finished since", set_aside(batch.store))

    batch.then(settle)


def unconfirmed(owed: Owed, batch: Batch, output: Any) -> None:
    """Keep what the erasure `batch` (which answered `output`) owes, its commit cut off unconfirmed:
    its scrub, and its answer for a retry (`unsettled`). Nothing for a batch that erases nothing."""
    if batch.erasing is None:
        return
    owed.scrub = True
    owed.retry_at = 0.0
    subject, needles = batch.erasing
    last = batch.last_written()
    if subject and last is not None:
        owed.unsettled.pop(subject, None)
        owed.unsettled[subject] = Unsettled(last[0], last[1], batch.correlation_id, output, needles)
        while len(owed.unsettled) > UNSETTLED:
            del owed.unsettled[next(iter(owed.unsettled))]


def unsettled(batch: Batch, subject: str, finish: Callable[[T, bool, str, list[str]], T]) -> T | None:
    """The answer of this process's erasure of `subject` whose commit was cut off unconfirmed, if it
    landed (its last event is in the log, of its call), completed after `batch` commits by the
    scrub it owes (`settle_after`); None if there is none, or it did not land."""
    record = None if batch.owed is None else batch.owed.unsettled.get(subject)
    if record is None:
        return None
    found = list(batch.tx.stream(record.stream, record.version, record.version))
    if not found or found[0].correlation_id != record.correlation:
        return None
    owed = batch.owed
    settle_after(batch, record.needles, finish)

    def answered(output: T) -> T:  # a later call of the same is a new one
        owed.unsettled.pop(subject, None)
        return output

    batch.then(answered)
    return record.output


def set_aside(store: str) -> list[str]:
    """What an erasure says of the stores restores set aside beside the store folder `store`
    (`<store>.replaced-N`, kept by `restore --replace`): they keep what they held (nothing
    for a database store, or when there are none)."""
    kept = [] if not store or is_database_url(store) else staging.set_aside(Path(store))
    if not kept:
        return []
    return [f"{', '.join(str(path) for path in kept)} (set aside by restore --replace) still hold what they held; "
            "delete them, or forget there too"]


def scrub_store(memory: Memory, needles: Sequence[bytes] = (), timeout: float = 10.0) -> Scrubbed:
    """Overwrite what erasures left in `memory`'s files: the log's, and the views' cache when they
    live apart (see `EventLog.scrub`), waiting up to `timeout` seconds for readers that may still
    see old pages. Call it holding the lock, outside any transaction.

    The views' table of types is rewritten first (`Views.repack`): a type only an erased entity
    had may be a separator in it, which `needles` (names) never match; so `chronograph scrub`
    takes it out of a store an earlier version's forget left it in, too."""
    try:
        memory.views.repack()
        done = memory.log.scrub(needles, timeout)
        if memory.cache is not None:
            local = memory.cache.scrub(b"scrub", needles, timeout)
            if not local.held:
                memory.views.scrubbed()
            done = Scrubbed(done.zeroed + local.zeroed, done.held + local.held, done.unreached)
    except BaseException:
        memory.owed.scrub = True  # finished at a later write (`settle_owed`), if nothing else does first
        raise
    if not done.held:
        memory.owed.scrub = False
    return done


def finish_scrubbing(memory: Memory) -> None:
    """Scrub now if an erasure committed and its scrub never finished (a process killed between the
    two, or a scrub readers held back): its old bytes stay in the file's free pages until a scrub,
    and nothing else would ever start one."""
    with memory.log.read() as log:
        pending = log.erasures() > log.scrubbed_through()
    if pending:
        with memory.lock, suppress(EventStoreError):  # what fails is said by `chronograph scrub`, which retries
            memory.scrub(timeout=OPEN_SCRUB_WAIT)


def settle_owed(memory: Memory) -> None:
    """Finish the scrub an erasure of this process owes (its commit was cut off, or its scrub
    failed), if the log says one is owed: at a write, or the follower's look, rather than at the
    next opening only. Tried at most every `OWED_RETRY` seconds while it fails or readers hold it
    back; call it holding the lock, outside any transaction."""
    owed = memory.owed
    if not owed.scrub or time.monotonic() < owed.retry_at:
        return
    owed.retry_at = time.monotonic() + OWED_RETRY
    with suppress(EventStoreError, OSError, lmdb.Error):  # what fails is said by `chronograph scrub`
        with memory.log.read() as log:
            pending = log.erasures() > log.scrubbed_through()
        if not pending:  # (a commit cut off before it landed, or another process scrubbed)
            owed.scrub = False
            return
        memory.scrub(timeout=OPEN_SCRUB_WAIT)
