"""The live views of a log: opened (built or caught up if needed), kept current inline.

Every write goes through `Views.transact`: the work reads the views and appends in one
write transaction, and the inline hook folds the new events into the views with their
checkpoint before that transaction commits, so a writer reads its own write at once, in
any process. Reads take one read transaction: a consistent snapshot of views and log.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import NamedTuple, TypeVar

import lmdb
from chronograph.eventstore import Envelope, EventLog, LmdbEnv, LogReader, LogTransaction
from chronograph.projections.errors import ViewsDamagedError, ViewsUnavailableError
from chronograph.projections.fold import apply_all
from chronograph.projections.keys import VECTORS
from chronograph.projections.live import images, seeding
from chronograph.projections.live.anchor import mark
from chronograph.projections.live.binding import Colocated, bind
from chronograph.projections.live.catchup import Progress, catch_up
from chronograph.projections.live.derived import foreign, retire
from chronograph.projections.live.erasure import (
    drop_answers,
    erased,
    purge_orphan_vectors,
    purge_vectors,
    purge_views,
    repack_texts,
)
from chronograph.projections.live.rebuilding import GenerationMoved, Rebuilding, WentBack
from chronograph.projections.past.snapshots import Snapshots
from chronograph.projections.search.indexes import SearchIndex
from chronograph.projections.search.wordindex import WorkspaceIndex
from chronograph.projections.states.graph import LmdbGraph
from chronograph.projections.states.lmdbstate import LmdbState
from chronograph.projections.tables import Pointer, Tables, open_tables, slot

__all__ = ["Snapshot", "Views"]

T = TypeVar("T")

CATCH_UP_CHUNK = 50_000
"""Events folded per transaction when catching up at open (other writers get turns)."""


class Snapshot(NamedTuple):
    """The live views and the log, read together."""

    graph: LmdbGraph
    log: LogReader


class Views(Rebuilding):
    """The views of `log`. Opening builds them if absent and catches them up if behind.

    Raises (on construction):
        ViewsUnavailableError: If a read-only store has no views.
    """

    def __init__(self, log: EventLog, *, progress: Progress | None = None, cache: LmdbEnv | None = None) -> None:
        self.log = log
        self.binding = bind(log, cache)
        self.env = self.binding.env
        self.pointer = Pointer(self.env)
        self._slots: dict[str, Tables] = {}
        self._adopting = threading.Lock()
        self._tables: Tables | None = None
        self._erasures_seen: int | None = None
        self._erasing: int | None = None
        self._overtakable = isinstance(self.binding, Colocated) and not self.env.readonly  # (a cache follows)
        self.guard: Callable[[], AbstractContextManager[bool]] = lambda: nullcontext(True)
        """The lock of this process's users of the store if no other thread holds it (yields whether it
        is held), for a read to catch the views up under (the memory's: taken from free, it `refresh`es)."""
        self.observed_erasures: int | None = None
        """The log's erasure count as a follower last saw it (None: no follower; ask the log)."""
        self.search = SearchIndex(self.env, self.erasures_in)
        """The word indexes, kept in the store and caught up from the log."""
        self.snapshots = Snapshots(self.env, erasures_in=self.erasures_in)
        """Saved folds of the log, for time travel."""
        self.seeds = seeding.CacheSeeds(log, self.binding, self.env, self.pointer, lambda: {
            Snapshots.NAME: self.snapshots.db, SearchIndex.NAME: self.search.db, VECTORS: self._vectors})
        """What new caches of a log elsewhere start from (see `seeding`)."""
        with self.env.read() as txn:
            generation = self.pointer.generation(txn)
        if self.env.readonly:
            if generation == 0:
                raise ViewsUnavailableError(
                    f"the store at {log.location} has no views of this version's format yet (a new version, or "
                    "a rebuild or copy stopped before its end); build them with `chronograph replay --rebuild "
                    f"--store {log.location}`, or start `chronograph serve` on it once"
                )
            self.adopt(generation)
            missed = self._missed()
            if missed > 0:  # written by another version of Chronograph, or emptied by its rebuild
                raise ViewsUnavailableError(
                    f"the store at {log.location} holds {missed:,} event(s) this version's views have not folded "
                    "(another version of Chronograph wrote to it, or emptied them in a rebuild); a read-only "
                    f"command would answer from an older state. Fold them with `chronograph replay --rebuild "
                    f"--store {log.location}`, or start `chronograph serve` on it once"
                )
            return
        self._open_erasables()
        self.env.on_reopen(self._reopened)
        built: int | None = None  # the erasure count a new cache's views were made at
        if generation == 0:
            seed = self.seeds.start(self._tables_of(seeding.GENERATION), progress)
            if seed is None:
                built, generation = self._first_build(progress)
            else:
                built = seed.erasures
                self.adopt(seeding.GENERATION)
                self.catch_up(progress=progress)
        if generation:
            self.adopt(generation)
            self.catch_up(progress=progress)
        log.add_inline_hook(self._on_append)
        log.add_erase_hook(self._on_erase)
        with self.env.read() as txn:  # what was erased while a cache was away, or by another version, may be here
            self._erasures_seen = self.pointer.erasures(txn)
        if self._erasures_seen is None:  # new views (built from the erased log), or views of an earlier version
            count = self._log_erasures() if built is None else built  # (not the log's now: `refresh` folds
            if self.env.fresh or count == 0:  # an erasure made since, and scrubs)
                self.env.write(lambda txn: self.pointer.set_erasures(txn, count))
                self._erasures_seen = count
        self.refresh()

    def _missed(self) -> int:
        """How many events of the log the views have not folded, the generation read with the
        checkpoint in one snapshot: a rebuild another process swaps in meanwhile empties the slot
        this process adopted, which must not read as views left behind."""
        while True:
            with self.binding.read() as (log, txn):
                generation = self.pointer.generation(txn)
                if generation == self.tables.generation:
                    return log.head() - self._checkpoint(txn)
            self.adopt(generation)

    def _open_erasables(self) -> None:
        self._vectors = self.env.open_db(VECTORS)
        self._foreign = [self.env.open_db(name) for name in self.env.database_names() if foreign(name)]
        """The databases other versions of Chronograph derive from the log (other view formats)."""

    def _reopened(self) -> None:
        """Open every handle again (the environment was reopened: see `LmdbEnv.reopen`)."""
        self._slots.clear()
        if self._tables is not None:
            self._tables = self._tables_of(self._tables.generation)
        self.pointer = self.seeds.pointer = Pointer(self.env)
        self.search.db = self.env.open_db(SearchIndex.NAME)
        self.snapshots.db = self.env.open_db(Snapshots.NAME)
        self._open_erasables()

    @property
    def tables(self) -> Tables:
        """The tables of the generation this process currently uses."""
        assert self._tables is not None
        return self._tables

    def adopt(self, generation: int) -> None:
        """Use the tables of `generation` from now on (after a rebuild swapped it in); readers of
        several threads may find it moved at once."""
        with self._adopting:
            if self._tables is None or self._tables.generation != generation:
                if self._tables is not None:
                    self.search.reset()  # indexes and images of other views may disagree with these
                self._tables = self._tables_of(generation)

    def _tables_of(self, generation: int) -> Tables:
        known = self._slots.get(slot(generation))
        if known is None:  # a slot's handles are opened once per process
            known = self._slots[slot(generation)] = open_tables(self.env, generation, create=not self.env.readonly)
        return known._replace(generation=generation)

    def keep_seed(self, spacing: int = seeding.SPACING, stop: Callable[[], bool] | None = None) -> bool:
        """Keep a seed of these views in their log if they stand `spacing` events or more past its
        newest; return whether one was kept (see `CacheSeeds.keep`)."""
        return self.seeds.keep(self.tables, spacing, stop)

    # --- reading --------------------------------------------------------------------------

    @contextmanager
    def snapshot(self) -> Iterator[Snapshot]:
        """The live views and the log as one consistent snapshot, for the `with` block. Views behind the
        log (another version of Chronograph appended to it, or its forget emptied them: an emptied slot
        reads as checkpoint 0) are caught up first under `guard`, unless another thread holds it (then
        that one folds them) or this thread has a transaction open."""
        check = self._overtakable and not self.env.gate.mine
        while True:
            behind = False
            with self.binding.read() as (log, txn):
                generation = self.pointer.generation(txn)
                if generation == 0:
                    raise _dropped(self.log.location)
                if generation == self.tables.generation:
                    try:
                        graph = LmdbGraph(txn, self.tables)  # (its position: the views' checkpoint)
                        behind = check and graph.position < log.head()
                        if not behind:
                            yield Snapshot(graph, log)
                            return
                    except ViewsDamagedError as damage:
                        raise damage.at(self.log.location) from None
            if not behind:
                self.adopt(generation)
                continue
            with self.guard() as check:  # (not held: answered as they are)
                if check:
                    self.catch_up()

    @contextmanager
    def read(self) -> Iterator[LmdbGraph]:
        """A consistent snapshot of the live views for the duration of the `with` block."""
        with self.snapshot() as snapshot:
            yield snapshot.graph

    def search_index(self, snapshot: Snapshot, workspace: str) -> WorkspaceIndex:
        """The search index of `workspace`, current at the snapshot's position; the caller holds
        `search.lock` (taken before the snapshot) while it uses it.

        Raises:
            ProjectionError: If the calling thread does not hold `search.lock`.
        """
        return self.search.current(snapshot.log, snapshot.graph, workspace)

    def known_search_index(self, snapshot: Snapshot, workspace: str) -> WorkspaceIndex | None:
        """The search index of `workspace` if it is at hand (held, or kept in the store), current at
        the snapshot's position; None rather than building one. As `search_index`, under `search.lock`.

        Raises:
            ProjectionError: If the calling thread does not hold `search.lock`.
        """
        return self.search.known(snapshot.log, snapshot.graph, workspace)

    def prepare_search(self, between: Callable[[], object] | None = None) -> int:
        """Bring every workspace's search image to the head; return how many were saved (see
        `images`: a part at a time; `between` runs after each part)."""
        return images.prepare(self.search, self.snapshot, between)

    def refresh(self) -> None:
        """Catch this process up with erasures made elsewhere, before it reads or writes (call it with
        no transaction open). An embedded store reopens its environment (see `LmdbEnv.refresh`). The
        log's erasure count is compared with the one the views were last scrubbed at, kept with them
        (a cache away during a forget, or a store another version forgot in, knows): if they differ,
        the erasure records are folded, which takes the entities out of the views, what they derived
        is dropped (snapshots, search images, kept answers, embeddings of entities they no longer
        hold), the file is scrubbed, and only then the count recorded."""
        colocated = isinstance(self.binding, Colocated)
        count: int | None
        if colocated:
            if self.env.readonly or self.env.closed:
                return
            with self.env.read() as txn:
                count, seen = self.erasures_in(txn), self.pointer.erasures(txn)
            self.env.refresh(count)
        else:  # (a follower tells the count, else the log)
            count = self.observed_erasures
            if count is None:  # (a follower looks whenever the head moves)
                count = self._check_log()
            if self.binding.unsure:  # a write whose commit was cut off may have landed: read nothing before it
                self.catch_up()
                self.binding.unsure = False
                count = self.observed_erasures
            if count is None:
                count = self._log_erasures()
            seen = self._erasures_seen
        if count == seen:
            return
        if not colocated:
            self.env.reopen()
        self.catch_up()
        self.env.write(self._drop_derived)
        scrubbed = self.log.scrub() if colocated else self.env.scrub(b"scrub")
        if not scrubbed.held:  # else the next refresh scrubs again
            self.env.write(lambda txn: self.pointer.set_erasures(txn, count))
        self._erasures_seen = count

    def _drop_derived(self, txn: lmdb.Transaction) -> None:
        """Drop what these views derived that may hold what erasures took out of them: snapshots,
        search images (and this process's indexes), kept answers, vectors of entities gone, and the
        names and types their keys kept as separators (`repack_texts`)."""
        repack_texts(txn, self.tables, names=True)
        if self.snapshots.db is not None:
            txn.drop(self.snapshots.db, delete=False)
        self.search.forget(txn)
        drop_answers(self.env, txn)
        purge_orphan_vectors(txn, self._vectors, LmdbState(txn, self.tables))

    def repack(self) -> None:
        """Rewrite the small table whose keys spell types (`repack_texts`) before a scrub, so that
        no type only an erased entity had stays behind as a separator."""
        self.env.write(lambda txn: repack_texts(txn, self.tables))

    def scrubbed(self) -> None:
        """Record, in a cache of a log elsewhere, that its file was just scrubbed of every erasure
        these views have seen (by `Memory.scrub`, after a forget or `chronograph scrub`)."""
        seen = self._erasures_seen
        if not isinstance(self.binding, Colocated) and seen is not None:
            self.env.write(lambda txn: self.pointer.set_erasures(txn, seen))

    def _log_erasures(self) -> int:
        with self.log.read() as log:
            return log.erasures()

    @property
    def erasures_seen(self) -> int | None:
        """The log's erasure count these views last caught up with (None: not looked yet)."""
        return self._erasures_seen

    def erasures_in(self, txn: lmdb.Transaction) -> int:
        """The log's erasure count, read in a transaction of the views' environment."""
        with self.binding.log_in(txn) as log:
            return log.erasures()

    def behind(self) -> int:
        """How many events of the log the views have not folded yet (0 when current)."""
        with self.binding.read() as (log, txn):
            return log.head() - self._checkpoint(txn)

    def _checkpoint(self, txn: lmdb.Transaction) -> int:
        """The live generation's checkpoint, read in `txn`.

        Raises:
            ViewsDamagedError: Naming the store, if it fails its checksum.
        """
        try:
            return self.tables.checkpoint(txn)
        except ViewsDamagedError as damage:
            raise damage.at(self.log.location) from None

    # --- writing --------------------------------------------------------------------------

    def transact(self, work: Callable[[LogTransaction, LmdbState], T]) -> T:
        """Run `work(tx, state)` in one write transaction, with views current and updated inline.

        `state` reads the live views in the same transaction; anything `work` appends
        is folded into them before the commit. If `work` raises, nothing is written. Views of a
        log that went back under them are rebuilt first (see `anchor`).
        """
        remote = not isinstance(self.binding, Colocated)
        while True:

            def both(tx: LogTransaction, txn: lmdb.Transaction) -> T:
                tables = self.tables
                self._check_generation(txn, tables)
                if remote:  # (the event at the checkpoint came back with the lock)
                    self._same_log(tx, txn, tables, tx.head())
                catch_up(tx, txn, tables, tx.head())
                return work(tx, LmdbState(txn, tables))

            self._erasing = None
            try:
                outcome = self.binding.write(both, since=self.tables.checkpoint)
            except GenerationMoved as moved:
                self.adopt(moved.generation)
                continue
            except WentBack as back:
                self._rebuild_after(back.reason)
                continue
            except ViewsDamagedError as damage:
                raise damage.at(self.log.location) from None
            if self._erasing is not None:  # its views committed: a commit cut off leaves the count to `refresh`
                self._erasures_seen = self._erasing
            return outcome

    def catch_up(self, progress: Progress | None = None, until: int | None = None) -> int:
        """Fold the events the views have not seen (up to `until`, default the log's head), in
        chunks; return the new checkpoint. A cache whose log went back under it (see `anchor`) is
        rebuilt from the log instead."""
        remote = not isinstance(self.binding, Colocated)
        while True:
            head = self.log.head() if until is None else until

            def step(log: LogReader, txn: lmdb.Transaction, head: int = head) -> int:
                tables = self.tables
                self._check_generation(txn, tables)
                if remote:
                    self._same_log(log, txn, tables)
                return catch_up(log, txn, tables, head, limit=CATCH_UP_CHUNK)

            try:
                checkpoint = self.binding.fold(step)
            except GenerationMoved as moved:
                self.adopt(moved.generation)
                continue
            except WentBack as back:
                self._rebuild_after(back.reason, progress)
                continue
            except ViewsDamagedError as damage:
                raise damage.at(self.log.location) from None
            if progress is not None:
                progress("catch-up", checkpoint, head)
            if checkpoint >= head:
                return checkpoint

    def _check_generation(self, txn: lmdb.Transaction, tables: Tables) -> None:
        live = self.pointer.generation(txn)
        if live == 0:
            raise _dropped(self.log.location)
        if live != tables.generation:
            raise GenerationMoved(live)

    def _on_append(self, tx: LogTransaction, envelopes: Sequence[Envelope]) -> None:
        txn = self.binding.hook_txn(tx)
        tables = self.tables
        self._check_generation(txn, tables)
        first = envelopes[0].position
        checkpoint = catch_up(tx, txn, tables, first - 1)
        if checkpoint != first - 1:  # (`transact` looks first: a log that went back after that look)
            raise WentBack(f"the views stand at position {checkpoint:,}, and the log appends at {first:,}")
        apply_all(LmdbState(txn, tables), envelopes)
        tables.set_checkpoint(txn, envelopes[-1].position, mark(envelopes[-1]))

    def _on_erase(self, tx: LogTransaction, originals: Sequence[Envelope]) -> None:
        txn = self.binding.hook_txn(tx)
        tables = self.tables
        self._check_generation(txn, tables)
        what = erased(originals)
        purge_views(LmdbState(txn, tables), what)
        self.snapshots.drop_from(txn, originals[0].position)
        for workspace in what.workspaces:
            self.search.drop_image(txn, workspace)
        purge_vectors(txn, self._vectors, sorted(what.entities))
        retire(txn, self._foreign, self.pointer)  # another version rebuilds them from the erased log
        drop_answers(self.env, txn)
        count = tx.erasures()
        colocated = isinstance(self.binding, Colocated)
        if (self.pointer.erasures(txn) if colocated else self._erasures_seen) != count - 1:
            # Another server's erasure committed after this process last looked (the write's
            # catch-up folded it, which takes its entities out of the views only): what was
            # derived from them goes too, as `refresh` drops it, before the count says so.
            self._drop_derived(txn)
        if colocated:  # scrubbed after the commit, with the log
            self.pointer.set_erasures(txn, count)
        else:  # its cache is scrubbed after the commit (`scrubbed` says so), once the views commit (`transact`)
            self._erasing = count


def _dropped(location: object) -> ViewsUnavailableError:
    return ViewsUnavailableError(f"the views of the store at {location} were dropped by a rebuild that did not "
                                 "finish; open the store again to build them")
