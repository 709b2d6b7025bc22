"""The word indexes of a store, one per workspace: kept in the store, caught up from the log.

A process loads a workspace's index from its image in the store (the `search.v<IMAGE_FORMAT>`
database), brings it up to the snapshot it answers from by re-indexing the entities the
log changed since the image's position, and keeps it in memory from then on. Only a
workspace without an image is indexed from every entity, once; its image is saved
right after, again every `SAVE_EVERY` events, when a server has been idle a moment after
its index changed (see `Memory.keep_images`), and when the store closes. Threads share the
indexes under `lock`, which a search holds from before it opens its read snapshot until
it is done with the index: so the indexes move forward from one snapshot to a later one,
never back to an earlier (which would mean reading them again from the image). An image is a
fold of the log up to its position, which never changes, so an old one is only slower
to catch up, never wrong; a rebuild of the views drops them all.

The images are not written inline with each write on purpose: a posting list per term
would dirty dozens of B-tree pages per durable write (see docs/decisions.md).
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import lmdb
from chronograph.eventstore import EntityCreated, LmdbEnv, LogReader
from chronograph.eventstore.keys import digest
from chronograph.projections.search.wordindex import IMAGE_FORMAT, WorkspaceIndex
from chronograph.projections.states.graph import LmdbGraph

__all__ = ["SAVE_EVERY", "SearchIndex"]

SAVE_EVERY = 10_000
"""Events an index may run ahead of its saved image before it is saved again."""


class SearchIndex:
    """The word indexes of one store in this process."""

    NAME = f"search.v{IMAGE_FORMAT}"

    def __init__(self, env: LmdbEnv, erasures_in: Callable[[lmdb.Transaction], int] | None = None) -> None:
        self.env = env
        self.erasures_in = erasures_in
        """The log's erasure count in a transaction (None: never erased, e.g. in tests)."""
        self.erasures = 0
        """The erasure count the indexes of this process were filled at."""
        absent = env.readonly and self.NAME not in env.database_names()
        self.db = None if absent else env.open_db(self.NAME)
        self._workspaces: dict[str, WorkspaceIndex] = {}
        self._saved: dict[str, int] = {}
        """workspace -> the position of its image in the store (-1: none)"""
        self.lock = threading.RLock()
        """Held by whoever uses the indexes of this process (see the module docstring)."""
        self._changed: set[str] = set()
        """Workspaces whose index holds what its image lacks (built, or entities re-indexed since)."""

    def current(self, log: LogReader, graph: LmdbGraph, workspace: str) -> WorkspaceIndex:
        """The workspace's index, brought up to the position of `graph` (same snapshot as `log`)."""
        index = self.known(log, graph, workspace)
        if index is None:
            index = self._workspaces[workspace] = self._build(graph, workspace)
            _catch_up(index, log, graph)
        return index

    def known(self, log: LogReader, graph: LmdbGraph, workspace: str) -> WorkspaceIndex | None:
        """The workspace's index if this process holds it or the store keeps its image, brought up
        to the position of `graph`; None rather than indexing every entity (and keeping an image)."""
        erasures = log.erasures()
        if erasures != self.erasures:  # something was forgotten: indexes may hold its words
            self.reset()
            self.erasures = erasures
        index = self._workspaces.get(workspace)
        if index is None or index.position > graph.position:
            index = self._load(graph, workspace)
            if index is None:
                return None
            self._workspaces[workspace] = index
        if index.position < graph.position and _catch_up(index, log, graph):
            self._changed.add(workspace)
        return index

    def loaded(self) -> list[str]:
        """The workspaces whose index this process holds."""
        return list(self._workspaces)

    def _load(self, graph: LmdbGraph, workspace: str) -> WorkspaceIndex | None:
        if self.db is None:
            return None
        data = graph.txn.get(digest(workspace.encode()), db=self.db)
        index = None if data is None else WorkspaceIndex.from_image(bytes(data))
        if index is None or index.workspace != workspace or index.position > graph.position:
            return None
        self._saved[workspace] = index.position
        return index

    def _build(self, graph: LmdbGraph, workspace: str) -> WorkspaceIndex:
        index = WorkspaceIndex(workspace)
        for record in graph.entities(workspace):
            index.put(record)
        index.position = graph.position
        self._saved[workspace] = -1
        self._changed.add(workspace)
        return index

    # --- keeping images -------------------------------------------------------------------

    def due(self, *, every: int = SAVE_EVERY) -> list[WorkspaceIndex]:
        """The indexes whose image is missing or `every` events or more behind them."""
        if self.db is None or self.env.readonly:
            return []
        return [
            index for workspace, index in tuple(self._workspaces.items())  # a copy: searches add to it meanwhile
            if (saved := self._saved.get(workspace, -1)) < 0 or index.position - saved >= every
        ]

    def changed(self) -> list[WorkspaceIndex]:
        """The indexes holding what their image lacks (an index only moved past events of other
        workspaces is not: its image, caught up from there, gives the same index)."""
        if self.db is None or self.env.readonly:
            return []
        return [self._workspaces[workspace] for workspace in self._changed if workspace in self._workspaces]

    def save(self, *, every: int | None = SAVE_EVERY) -> int:
        """Save the images that are `due` (`every` None: those that `changed`); return how many.
        Call it outside any transaction."""
        with self.lock:
            indexes = self.changed() if every is None else self.due(every=every)
            if not indexes:
                return 0
            images = [(index.workspace, index.position, index.image()) for index in indexes]

        def write(txn: lmdb.Transaction) -> bool:
            if self.erasures_in is not None and self.erasures_in(txn) != self.erasures:
                return False  # the indexes may hold words forgotten since: not kept
            for workspace, _, image in images:
                txn.put(digest(workspace.encode()), image, db=self.db)
            return True

        if not self.env.write(write):
            self.reset()
            return 0
        for workspace, position, _ in images:
            self._saved[workspace] = position
            self._changed.discard(workspace)
        return len(images)

    def drop_image(self, txn: lmdb.Transaction, workspace: str) -> None:
        """Delete the image of `workspace` (it holds words an erasure removed)."""
        if self.db is not None:
            txn.delete(digest(workspace.encode()), db=self.db)

    def forget(self, txn: lmdb.Transaction) -> None:
        """Drop every image in `txn` and every index of this process (after a rebuild)."""
        if self.db is not None:
            txn.drop(self.db, delete=False)
        self.reset()

    def reset(self) -> None:
        """Forget this process's indexes, and keep none of them: the views were rebuilt under
        it (the rebuild keeps images of its own), so they may have been built from views that
        were wrong."""
        with self.lock:
            self._workspaces.clear()
            self._saved.clear()
            self._changed.clear()


def _catch_up(index: WorkspaceIndex, log: LogReader, graph: LmdbGraph) -> int:
    """Re-index the entities of the index's workspace that changed after its position; return
    how many."""
    touched: set[str] = set()
    for envelope in log.all(index.position + 1, graph.position):
        event = envelope.event
        if isinstance(event, EntityCreated):
            if event.workspace == index.workspace:
                touched.add(envelope.stream)
        elif index.knows(envelope.stream):
            touched.add(envelope.stream)
    found = []
    for stream in touched:
        record = graph.entity_by_stream(stream)
        if record is None:
            index.remove(stream)
        else:
            found.append(record)
    for record in sorted(found, key=lambda record: record.seq):  # new entities join the creation order last
        index.put(record)
    index.position = graph.position
    return len(touched)
