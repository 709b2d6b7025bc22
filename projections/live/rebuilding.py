"""When the live views are folded afresh from the log: built at a store's first opening, rebuilt on
request (`replay --rebuild`), and rebuilt in a cache whose log went back under it (see `anchor`).

`Rebuilding` is a part of `Views` (which holds the state it names), kept apart by concept.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import lmdb
from chronograph.eventstore import EventLog, LmdbEnv, LogReader
from chronograph.projections.errors import RebuildError, ViewsDamagedError
from chronograph.projections.live.anchor import went_back
from chronograph.projections.live.binding import Binding, Colocated
from chronograph.projections.live.catchup import Progress
from chronograph.projections.live.erasure import drop_answers
from chronograph.projections.live.rebuild import RebuildReport, rebuild
from chronograph.projections.past.snapshots import Snapshots
from chronograph.projections.search.indexes import SearchIndex
from chronograph.projections.tables import Pointer, Tables

if TYPE_CHECKING:
    from chronograph.projections.live.seeding import CacheSeeds

__all__ = ["GenerationMoved", "LoggedProgress", "Rebuilding", "WentBack"]

_log = logging.getLogger("chronograph.views")


class GenerationMoved(Exception):
    """A rebuild swapped in another generation of the views; retry with it."""

    def __init__(self, generation: int) -> None:
        super().__init__(f"the views moved to generation {generation}; retry")
        self.generation = generation


class WentBack(Exception):
    """The log a cache's views were folded from went back under them (see `anchor`): rebuild them."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class Rebuilding:
    """How `Views` fold themselves afresh from the log."""

    log: EventLog
    binding: Binding
    env: LmdbEnv
    pointer: Pointer
    snapshots: Snapshots
    search: SearchIndex
    seeds: CacheSeeds
    _tables_of: Callable[[int], Tables]
    _foreign: Sequence[lmdb._Database]
    _vectors: lmdb._Database
    _erasures_seen: int | None
    rebuilding: str | None = None
    """Why the views are being rebuilt from a log that went back under them, while they are (None
    the rest of the time): every call of the process waits meanwhile (`_rebuild_after`), and an
    HTTP server's /ready says so."""

    @property
    def tables(self) -> Tables:  # (Views's)
        raise NotImplementedError

    def adopt(self, generation: int) -> None:  # (Views's)
        raise NotImplementedError

    def refresh(self) -> None:  # (Views's)
        raise NotImplementedError

    def _first_build(self, progress: Progress | None, tries: int = 3) -> tuple[int | None, int]:
        """Build the views of a store that has none: the erasure count their fold began at and 0, or
        None and the generation another process built meanwhile (two servers started together on a
        new store: the one whose rebuild loses the race takes the winner's views, rather than fail).

        Raises:
            RebuildError: If an entity was forgotten during each of `tries` folds (in the log's own
                file only: a cache of a shared log is built whatever is forgotten, see `rebuild`).
        """
        attempt = 1
        while True:
            try:
                return self.rebuild(progress).erasures, 0
            except RebuildError as error:
                with self.env.read() as txn:
                    generation = self.pointer.generation(txn)
                if generation:
                    return None, generation
                if attempt == tries:  # an entity was forgotten during every try: say so
                    raise RebuildError(f"the views of {self.log.location} could not be built: {error} (each of "
                                       f"{tries} times); open the store again") from None
                attempt += 1

    def rebuild(self, progress: Progress | None = None, *, others: bool = False) -> RebuildReport:
        """Rebuild every view from the log into the idle slot and swap it in; with `others`, also
        empty what other versions of Chronograph derived from the log, if no other process has
        the store open (`replay --rebuild` after an upgrade: their pages then hold these views).

        Raises:
            RebuildError: If another rebuild swapped in first, or an entity was forgotten while it
                ran in the log's own file (a cache of a shared log goes on, as one away during the
                erasure would, and `refresh` scrubs after: here, or at a new cache's opening).
        """
        remote = not isinstance(self.binding, Colocated)
        report = rebuild(self.log, self.binding, self.pointer, self.snapshots, self._tables_of, progress,
                         self._foreign if others else (), forgiving=remote)
        self.adopt(report.generation)
        self.env.write(self.search.forget)
        if remote and self._erasures_seen is not None:
            self.refresh()
        return report


    def _same_log(self, log: LogReader, txn: lmdb.Transaction, tables: Tables, head: int | None = None) -> None:
        """Raise WentBack if the log is not the one `tables` were folded from up to their checkpoint
        (`head`: the log's, if known already)."""
        reason = went_back(log, tables.checkpoint(txn), tables.anchor(txn), head)
        if reason is not None:
            raise WentBack(reason)

    def _check_log(self) -> int | None:
        """Rebuild a cache's views if the log went back under them (see `anchor`); return the log's
        erasure count, read in the same snapshot (None after a rebuild)."""
        try:
            with self.binding.read() as (log, txn):
                self._same_log(log, txn, self.tables)
                return log.erasures()
        except WentBack as back:
            self._rebuild_after(back.reason)
            return None
        except ViewsDamagedError as damage:
            raise damage.at(self.log.location) from None

    def _rebuild_after(self, reason: str, progress: Progress | None = None) -> None:
        """Rebuild a cache's views from its log, which went back under them (`reason`), with nothing
        they derived: snapshots, search images, kept answers and embeddings may hold what it lost.

        It runs where the change was noticed: under the memory's lock in a call, a write or the
        follower's catch-up, so every call of this process waits until the new views are swapped
        in. That is meant: the live slot holds the history the log lost, which no answer may show
        meanwhile. `rebuilding` says why while it runs (an HTTP server's /ready answers 503 with
        it), and the fold says how far it got on the `chronograph.views` logger for a large log
        (`progress`, else `LoggedProgress`)."""
        _log.warning("chronograph: the cache at %s is rebuilt from the log at %s: %s; this process's calls "
                     "wait until it is done", self.env.path, self.log.location, reason)
        self.rebuilding = reason
        try:
            self._rebuild_from_log(progress if progress is not None else LoggedProgress())
        finally:
            self.rebuilding = None

    def _rebuild_from_log(self, progress: Progress) -> None:
        """`_rebuild_after`'s work: drop what the views derived, fold afresh, swap, scrub."""

        def forget(txn: lmdb.Transaction) -> None:
            if self.snapshots.db is not None:
                txn.drop(self.snapshots.db, delete=False)
            self.search.forget(txn)
            drop_answers(self.env, txn)
            txn.drop(self._vectors, delete=False)

        self.env.write(forget)
        report = rebuild(self.log, self.binding, self.pointer, self.snapshots, self._tables_of, progress,
                         forgiving=True)
        self.adopt(report.generation)

        self.env.write(self.search.forget)
        # the old slot and what was dropped are free pages now, which may hold what the new history
        # erased since (a count that matches the old one by chance says nothing): scrubbed always
        if not self.env.scrub(b"scrub").held:  # else the next scrub or opening finishes it
            self.env.write(lambda txn: self.pointer.set_erasures(txn, report.erasures))
        self._erasures_seen = report.erasures
        self.seeds.at = None


class LoggedProgress:
    """Says on the `chronograph.views` logger how far a rebuild of a large log has got, every
    tenth or so (a server's calls wait for it: its operator should see it move)."""

    SMALL = 20_000
    """Events too few to mention."""

    def __init__(self) -> None:
        self._said: dict[str, int] = {}
        """stage -> the last tenth said"""

    def __call__(self, stage: str, done: int, total: int) -> None:
        if total < self.SMALL:
            return
        tenth = min(10, done * 10 // total)
        if tenth > self._said.get(stage, -1):
            self._said[stage] = tenth
            _log.warning("chronograph: rebuilding the cache: %s: %s of %s (%.0f%%)", stage, f"{done:,}",
                         f"{total:,}", 100 * done / total)
