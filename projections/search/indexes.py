"""The word indexes of a store, one per workspace: kept in the store, caught up from the log.

A process loads a workspace's index from its image in the store (the `search.v<IMAGE_FORMAT>`
database: a head under the workspace's digest, and the parts it names after it, see
`wordimage`), brings it up to the snapshot it answers from by re-indexing the entities the
log changed since the image's position, and keeps it in memory from then on. A process that
holds no index keeps an image built a part at a time (`spool`, then `keep`: an import's last
step). Only a workspace without an image is indexed from every entity, once; its image is saved
right after, again every `SAVE_EVERY` events, when a server has been idle a moment after
its index changed (see `Memory.keep_images`), and when the store closes. Threads share the
indexes under `lock`: `current` and `known` catch an index up (which changes it) and hand it
out only to a thread that holds it, and that thread keeps holding it while it reads the index
(`at` takes it for a `with` block). A reader takes it before it opens its read snapshot, so the
shared indexes move forward from one snapshot to a later one, never back to an earlier; a
snapshot older than the index (a reader that took the lock after opening it) gets an index of
its own, from the image, and leaves the shared one where it is. An image is a fold of the log
up to its position, which never changes, so an old one is only slower to catch up, never
wrong; a rebuild of the views drops them all.

The images are not written inline with each write on purpose: a posting list per term
would dirty dozens of B-tree pages per durable write (see docs/decisions.md).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import BinaryIO, NamedTuple

import lmdb
from chronograph.eventstore import EntityCreated, LmdbEnv, LogReader
from chronograph.eventstore.keys import digest
from chronograph.projections.errors import ProjectionError
from chronograph.projections.search.wordimage import IMAGE_FORMAT, PART_DOCS, PartedImage, loader, stamp_of
from chronograph.projections.search.wordindex import WorkspaceIndex
from chronograph.projections.states.graph import LmdbGraph

__all__ = ["SAVE_EVERY", "IndexLock", "SearchIndex", "Spooled", "drop_parts", "part_key"]

SAVE_EVERY = 10_000
"""Events an index may run ahead of its saved image before it is saved again."""


class IndexLock:
    """A reentrant lock that tells whether the calling thread holds it (the indexes refuse to be
    handed to a thread that does not)."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._owner: int | None = None
        self._depth = 0

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        """Take the lock (again, if this thread holds it); whether it was taken."""
        if not self._lock.acquire(blocking, timeout):
            return False
        self._owner = threading.get_ident()
        self._depth += 1
        return True

    def release(self) -> None:
        """Give back one `acquire`.

        Raises:
            RuntimeError: If the calling thread does not hold the lock.
        """
        if not self.held():
            raise RuntimeError("cannot release a lock this thread does not hold")
        self._depth -= 1
        if not self._depth:
            self._owner = None
        self._lock.release()

    def held(self) -> bool:
        """Whether the calling thread holds the lock."""
        return self._owner == threading.get_ident()

    def __enter__(self) -> IndexLock:
        self.acquire()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.release()


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
        self.lock = IndexLock()
        """Held by whoever uses the indexes of this process (see the module docstring)."""
        self._changed: set[str] = set()
        """Workspaces whose index holds what its image lacks (built, or entities re-indexed since)."""

    @contextmanager
    def holding(self, wanted: bool = True) -> Iterator[Callable[[], None]]:
        """`lock`, if `wanted`, for a read to take before it opens its snapshot, and a function that
        gives it back as soon as the read is done with the indexes (the rest of the read, such as
        building its answer, then runs beside the others that want them)."""
        held = wanted and self.lock.acquire()

        def done() -> None:
            nonlocal held
            if held:
                held = False
                self.lock.release()

        try:
            yield done
        finally:
            done()

    @contextmanager
    def at(self, log: LogReader, graph: LmdbGraph, workspace: str, *,
           build: bool = True) -> Iterator[WorkspaceIndex | None]:
        """The workspace's index at the position of `graph`, under `lock` for the `with` block:
        `current` (`build`), else `known`. Take the lock before opening the snapshot where the
        read can (see the module docstring)."""
        with self.lock:
            yield self.current(log, graph, workspace) if build else self.known(log, graph, workspace)

    def current(self, log: LogReader, graph: LmdbGraph, workspace: str) -> WorkspaceIndex:
        """The workspace's index, brought up to the position of `graph` (same snapshot as `log`),
        built from its entities if it is not at hand. The caller holds `lock` while it uses it.

        Raises:
            ProjectionError: If the calling thread does not hold `lock`.
        """
        index = self.known(log, graph, workspace)
        if index is None:
            index = self._build(graph, workspace)
            if not self._ahead(graph, workspace):
                self._workspaces[workspace] = index
                self._saved[workspace] = -1
                self._changed.add(workspace)
        return index

    def known(self, log: LogReader, graph: LmdbGraph, workspace: str) -> WorkspaceIndex | None:
        """The workspace's index if this process holds it or the store keeps its image, brought up
        to the position of `graph`; None rather than indexing every entity (and keeping an image).
        The caller holds `lock` while it uses it.

        Raises:
            ProjectionError: If the calling thread does not hold `lock`.
        """
        if not self.lock.held():
            raise ProjectionError("the word index of a workspace was asked for without its lock")
        erasures = log.erasures()
        if erasures != self.erasures:  # something was forgotten: indexes may hold its words
            self.reset()
            self.erasures = erasures
        if self._ahead(graph, workspace):  # an older snapshot: an index of its own (see the module docstring)
            index = self._load(graph, workspace)
            if index is not None and index.position < graph.position:
                _catch_up(index, log, graph)
            return index
        index = self._workspaces.get(workspace)
        if index is None:
            index = self._load(graph, workspace)
            if index is None:
                return None
            self._workspaces[workspace] = index
            self._saved[workspace] = index.position
        if index.position < graph.position and _catch_up(index, log, graph):
            self._changed.add(workspace)
        return index

    def _ahead(self, graph: LmdbGraph, workspace: str) -> bool:
        held = self._workspaces.get(workspace)
        return held is not None and held.position > graph.position

    def loaded(self) -> list[str]:
        """The workspaces whose index this process holds."""
        return list(self._workspaces)

    def kept_at(self, graph: LmdbGraph, workspace: str) -> int:
        """The position of `workspace`'s image in the store (-1: none), read without loading it."""
        data = None if self.db is None else graph.txn.get(digest(workspace.encode()), db=self.db)
        stamp = None if data is None else stamp_of(bytes(data))
        return -1 if stamp is None or stamp[0] != workspace else stamp[1]

    def _load(self, graph: LmdbGraph, workspace: str) -> WorkspaceIndex | None:
        if self.db is None:
            return None
        data = graph.txn.get(digest(workspace.encode()), db=self.db)
        db = self.db

        def part(image_id: bytes, number: int) -> bytes | None:
            found = graph.txn.get(part_key(workspace, image_id, number), db=db)
            return None if found is None else bytes(found)

        index = None if data is None else loader(bytes(data), part)
        if index is None or index.workspace != workspace or index.position > graph.position:
            return None
        return index

    @staticmethod
    def _build(graph: LmdbGraph, workspace: str) -> WorkspaceIndex:
        index = WorkspaceIndex(workspace)
        for record in graph.entities(workspace):
            index.put(record)
        index.position = graph.position
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

        db = self.db
        assert db is not None  # due and changed find nothing without it

        def write(txn: lmdb.Transaction) -> bool:
            if self.erasures_in is not None and self.erasures_in(txn) != self.erasures:
                return False  # the indexes may hold words forgotten since: not kept
            for workspace, _, image in images:
                drop_parts(txn, db, workspace)
                txn.put(digest(workspace.encode()), image, db=db)
            return True

        if not self.env.write(write):
            self.reset()
            return 0
        with self.lock:  # (a search may have caught an index up meanwhile: then it holds more than its image)
            for workspace, position, _ in images:
                self._saved[workspace] = position
                held = self._workspaces.get(workspace)
                if held is None or held.position == position:
                    self._changed.discard(workspace)
        return len(images)

    def spool(self, graph: LmdbGraph, workspace: str, into: BinaryIO, *, docs: int | None = None,
              between: Callable[[], object] | None = None) -> Spooled:
        """Build `workspace`'s image from its entities in `graph` a part at a time, into `into`
        (a temporary file), holding one part's index at a time (`docs` documents, default
        `PART_DOCS`); call `between` after each part.
        `keep` then writes it into the store, once the read of `graph` is over."""
        erasures = 0 if self.erasures_in is None else self.erasures_in(graph.txn)
        image = PartedImage(workspace, os.urandom(8), docs=docs or PART_DOCS)
        for record in graph.entities(workspace):
            part = image.put(record)
            if part is not None:
                _spill(into, part)
                if between is not None:
                    between()
        _spill(into, image.head(graph.position))
        return Spooled(workspace, graph.position, image.image_id, image.parts, erasures)

    def keep(self, spooled: Spooled, source: BinaryIO) -> bool:
        """Write an image `spool` built into the store: each part in a transaction of its own (so
        that none holds more than a part's pages), then the head, which makes it the image
        readers load; whether it was kept (not if something was forgotten since it was built).
        Call it outside any transaction."""
        if self.db is None or self.env.readonly:
            return False
        source.seek(0)
        db, workspace, image_id = self.db, spooled.workspace, spooled.image_id
        for number in range(spooled.parts):
            key, data = part_key(workspace, image_id, number), _unspill(source)

            def put(txn: lmdb.Transaction, key: bytes = key, data: bytes = data) -> bool:
                return bool(txn.put(key, data, db=db))

            self.env.write(put)
        head = _unspill(source)

        def write(txn: lmdb.Transaction) -> bool:
            if self.erasures_in is not None and self.erasures_in(txn) != spooled.erasures:
                drop_parts(txn, db, workspace)  # it may hold words forgotten since: not kept
                return False
            drop_parts(txn, db, workspace, keep=image_id)
            txn.put(digest(workspace.encode()), head, db=db)
            return True

        return self.env.write(write)

    def drop_image(self, txn: lmdb.Transaction, workspace: str) -> None:
        """Delete the image of `workspace` (it holds words an erasure removed)."""
        if self.db is not None:
            txn.delete(digest(workspace.encode()), db=self.db)
            drop_parts(txn, self.db, workspace)

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


class Spooled(NamedTuple):
    """An image built by `SearchIndex.spool`, waiting in its file to be kept."""

    workspace: str
    position: int
    image_id: bytes
    parts: int
    erasures: int
    """The log's erasure count it was built at."""


def _spill(into: BinaryIO, data: bytes) -> None:
    into.write(len(data).to_bytes(8, "little"))
    into.write(data)


def _unspill(source: BinaryIO) -> bytes:
    size = int.from_bytes(source.read(8), "little")
    data = source.read(size)
    if len(data) != size:
        raise ProjectionError("a spooled search image ends early")
    return data


def part_key(workspace: str, image_id: bytes, number: int) -> bytes:
    """Where part `number` of the image `image_id` of `workspace` is kept: after its head's key."""
    return digest(workspace.encode()) + image_id + number.to_bytes(4, "big")


def drop_parts(txn: lmdb.Transaction, db: lmdb._Database, workspace: str, keep: bytes = b"") -> None:
    """Delete the parts of `workspace`'s images (but those of the image `keep`)."""
    head = digest(workspace.encode())
    cursor = txn.cursor(db=db)
    found = cursor.set_range(head + b"\x00")
    while found:
        key = bytes(cursor.key())
        if not key.startswith(head):
            break
        found = cursor.delete() if key[len(head):len(head) + len(keep)] != keep or not keep else cursor.next()


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
