"""What every erasure command shares: its reason, the scrub that follows its commit, and what
its answer says of the copies out of its reach.

Forgetting an entity (`lifecycle/forgetting.py`) and a team entry (`team/forgetting.py`)
erase in the log's one write transaction, with the views' erase hook; once it commits,
the store's files are scrubbed of the old copies (`Memory.scrub`), and the answer says
whether every one of them was overwritten, and which copies beside the store still hold
what was erased (`set_aside`), the same words the tool and `chronograph forget` say.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import suppress
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, TypeVar

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

__all__ = ["Reason", "finish_scrubbing", "scrub_after", "scrub_store", "set_aside"]

Reason = Annotated[str, Meta(min_length=1, max_length=1024)]
"""Why something is forgotten (kept verbatim in the audit: say why, not what)."""

T = TypeVar("T")

OPEN_SCRUB_WAIT = 2.0
"""Seconds an open that finishes an erasure's scrub waits for another process's readers (those
it cannot wait out are left to the next open)."""


def scrub_after(batch: Batch, needles: Sequence[bytes], finish: Callable[[T, bool, str, list[str]], T]) -> None:
    """Once `batch` has committed, scrub the store (databases whose branch keys hold one of
    `needles` are repacked) and complete its answer with `finish(answer, scrubbed, message,
    elsewhere)`: `elsewhere`, what copies out of the store's reach still hold (`set_aside`)."""

    def scrub(output: T) -> T:
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

    batch.then(scrub)


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
    memory.views.repack()
    done = memory.log.scrub(needles, timeout)
    if memory.cache is not None:
        local = memory.cache.scrub(b"scrub", needles, timeout)
        if not local.held:
            memory.views.scrubbed()
        done = Scrubbed(done.zeroed + local.zeroed, done.held + local.held, done.unreached)
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
