"""The live views of a store: opened (built or caught up if needed), kept current inline.

Every write goes through `Views.transact`: the work reads the views and appends in one
write transaction, and the inline hook folds the new events into the views with their
checkpoint before that transaction commits, so a writer reads its own write at once, in
any process. Reads take one read transaction: a consistent snapshot of views and log.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TypeVar

from eventstore import Envelope, EventStore, Reader, Transaction
from projections.catchup import Progress, catch_up
from projections.errors import ViewsUnavailableError
from projections.fold import apply_all
from projections.graph import LmdbGraph
from projections.lmdbstate import LmdbState
from projections.search import SearchIndex, WorkspaceIndex
from projections.snapshots import Snapshots
from projections.tables import Pointer, Tables, open_tables

__all__ = ["Views"]

T = TypeVar("T")

CATCH_UP_CHUNK = 50_000
"""Events folded per transaction when catching up at open (other writers get turns)."""


class GenerationMoved(Exception):
    """A rebuild swapped in another generation of the views; retry with it."""

    def __init__(self, generation: int) -> None:
        super().__init__(f"the views moved to generation {generation}; retry")
        self.generation = generation


class Views:
    """The views of `store`. Opening builds them if absent and catches them up if behind.

    Raises (on construction):
        ViewsUnavailableError: If a read-only store has no views.
    """

    def __init__(self, store: EventStore, *, progress: Progress | None = None) -> None:
        self.store = store
        self.pointer = Pointer(store)
        self._tables: Tables | None = None
        self._search = SearchIndex()
        self.snapshots = Snapshots(store)
        """Saved folds of the log, for time travel."""
        with store.read() as reader:
            generation = self.pointer.generation(reader.txn)
        if store.readonly:
            if generation == 0:
                raise ViewsUnavailableError(
                    f"the store at {store.path} has no views yet; open it once for writing "
                    "(any chronograph command without --read-only) to build them"
                )
            self.adopt(generation)
        else:
            if generation == 0:
                from projections.rebuild import rebuild

                rebuild(self, progress=progress)
            else:
                from projections.rebuild import forget_leftovers

                self.adopt(generation)
                forget_leftovers(self)
                self.catch_up(progress=progress)
            store.add_inline_hook(self._on_append)

    @property
    def tables(self) -> Tables:
        """The tables of the generation this process currently uses."""
        assert self._tables is not None
        return self._tables

    def adopt(self, generation: int) -> None:
        """Use the tables of `generation` from now on (after a rebuild swapped it in)."""
        if self._tables is None or self._tables.generation != generation:
            self._tables = open_tables(self.store, generation, create=False)

    # --- reading --------------------------------------------------------------------------

    @contextmanager
    def read(self) -> Iterator[LmdbGraph]:
        """A consistent snapshot of the live views for the duration of the `with` block."""
        while True:
            with self.store.read() as reader:
                generation = self.pointer.generation(reader.txn)
                if generation == self.tables.generation:
                    yield LmdbGraph(reader.txn, self.tables)
                    return
            self.adopt(generation)

    def search_index(self, graph: LmdbGraph, workspace: str) -> WorkspaceIndex:
        """The search index of `workspace`, current at `graph`'s snapshot."""
        log = Reader(graph.txn, self.store.codec, self.store.dbs)
        return self._search.current(log, graph, workspace)

    def behind(self) -> int:
        """How many events of the log the views have not folded yet (0 when current)."""
        with self.store.read() as reader:
            return reader.head() - self.tables.checkpoint(reader.txn)

    # --- writing --------------------------------------------------------------------------

    def transact(self, work: Callable[[Transaction, LmdbState], T]) -> T:
        """Run `work(tx, state)` in one write transaction, with views current and updated inline.

        `state` reads the live views in the same transaction; anything `work` appends
        is folded into them before the commit. If `work` raises, nothing is written.
        """
        while True:
            tables = self.tables
            try:
                return self.store.transact(lambda tx, tables=tables: work(tx, self._current(tx, tables)))
            except GenerationMoved as moved:
                self.adopt(moved.generation)

    def catch_up(self, progress: Progress | None = None) -> int:
        """Fold the events the views have not seen, in chunks; return the new checkpoint."""
        while True:
            head = self.store.head()
            tables = self.tables

            def step(tx: Transaction, tables: Tables = tables, head: int = head) -> int:
                self._check_generation(tx, tables)
                return catch_up(tx, tables, head, limit=CATCH_UP_CHUNK)

            try:
                checkpoint = self.store.transact(step)
            except GenerationMoved as moved:
                self.adopt(moved.generation)
                continue
            if progress is not None:
                progress("catch-up", checkpoint, head)
            if checkpoint >= head:
                return checkpoint

    def _current(self, tx: Transaction, tables: Tables) -> LmdbState:
        self._check_generation(tx, tables)
        catch_up(tx, tables, tx.head())
        return LmdbState(tx.txn, tables)

    def _check_generation(self, tx: Transaction, tables: Tables) -> None:
        live = self.pointer.generation(tx.txn)
        if live != tables.generation:
            raise GenerationMoved(live)

    def _on_append(self, tx: Transaction, envelopes: Sequence[Envelope]) -> None:
        tables = self.tables
        self._check_generation(tx, tables)
        first = envelopes[0].position
        checkpoint = catch_up(tx, tables, first - 1)
        if checkpoint != first - 1:
            raise AssertionError(f"views at {checkpoint} cannot take events from {first}")
        apply_all(LmdbState(tx.txn, tables), envelopes)
        tables.set_checkpoint(tx.txn, envelopes[-1].position)
