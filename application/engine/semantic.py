"""Semantic search: the embedding projector behind the log, and the entities nearest a query.

Embeddings are an asynchronous projection. A thread of the server process looks at the
log's head a few times a second; when the vectors' checkpoint is behind, it reads the
entities changed since (in one read snapshot), embeds them without holding anything
(the slow part), then stores the vectors and the new checkpoint in one write
transaction, unless another process got there first. A write never waits for it.

A tool whose answer promises that an entity is embedded (Kuzu's create_entity) embeds it
itself right after its commit, once the model is loaded (`embed_now`): the vector is
stored ahead of the checkpoint, and the projector, reaching that stretch, finds it current
and passes over it. Bulk loads and catch-up stay with the projector.

Every use of the store in this process goes through the memory's lock (the projector's
reads and writes too): LMDB may only resize its map while no transaction of the process
is open.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any

from chronograph.application.engine.storelock import StoreLock
from chronograph.application.errors import UnavailableError
from chronograph.eventstore import EventStoreError
from chronograph.projections import EntityRecord, LmdbGraph, Snapshot, Views
from chronograph.projections.errors import EmbeddingsUnavailableError, ProjectionError
from chronograph.projections.search.embedder import Embedder, entity_text
from chronograph.projections.search.vectors import Match, Vectors, touched_entities

__all__ = ["STEP", "Semantic"]

POLL = 0.25
"""Seconds between looks at the log's head while there is nothing to embed."""
STEP = 128
"""Entities embedded per step (each step commits)."""
SETTLE = 32
"""Events a query embeds itself before it answers (more are left to the projector)."""
RETRY = 30.0
"""Seconds before an embedder that failed is tried again."""
QUERIES_KEPT = 256
NICE = 10
"""The projector thread's niceness (0 is normal, 19 the lowest priority)."""

Progress = Callable[[int, int], None]
"""(events embedded through, head): called after each step of a catch-up."""


class Semantic:
    """The vectors of one store under one embedder, and the projector that keeps them current."""

    def __init__(self, views: Views, embedder: Embedder, lock: StoreLock) -> None:
        self.views = views
        self.embedder = embedder
        self.lock = lock
        self.vectors = Vectors(views.env, embedder.model)
        views.env.on_reopen(lambda: setattr(self.vectors, "db", views.env.open_db(Vectors.NAME)))
        self.problem: str | None = None
        """Why the embedder failed last (None while it works)."""
        self.loaded = False
        """Whether the embedder has loaded and embedded once (a write embeds in the call only then)."""
        self.embedded = 0
        """Entities this process has embedded (by the projector)."""
        self._queries: OrderedDict[str, Any] = OrderedDict()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # --- the projector --------------------------------------------------------------------

    def step(self, limit: int = STEP) -> tuple[int, int]:
        """Embed the entities changed in the next stretch of the log; return (checkpoint, head).

        Raises:
            EmbeddingsUnavailableError: If the embedder cannot embed (nothing is stored).
        """
        with self.lock, self.views.snapshot() as snapshot:
            txn, graph = snapshot.graph.txn, snapshot.graph
            start, head = self.vectors.checkpoint(txn), graph.position
            erasures = snapshot.log.erasures()
            if start >= head:
                return start, head
            streams, stop = touched_entities(snapshot.log, start + 1, head, limit)
            known = self.vectors.versions(txn, streams)
            todo: list[EntityRecord] = []
            drop = []
            for stream in streams:
                record = graph.entity_by_stream(stream)
                if record is None:
                    if stream in known:
                        drop.append(stream)
                elif known.get(stream) != record.version:
                    todo.append(record)
        vectors: Any = self.embedder.embed([entity_text(r) for r in todo]) if todo else []
        self.embedded += len(todo)
        self.loaded = self.loaded or bool(todo)
        put = [(r.stream, r.workspace, r.version, vectors[i]) for i, r in enumerate(todo)]

        def write(txn: Any) -> bool:
            if self.vectors.checkpoint(txn) != start:
                return False  # another process embedded this stretch first
            if self.views.erasures_in(txn) != erasures:
                return False  # what was read may have been forgotten since: embed it again
            self.vectors.store(txn, put, drop, stop)
            return True

        if self.vectors.db is not None and not self.views.env.readonly:
            with self.lock:
                self.views.env.write(write)
        self.problem = None
        return stop, head

    def embed_now(self, records: Sequence[EntityRecord]) -> bool:
        """Embed `records`, just committed, if the model is loaded and working; return whether
        each one's vector is now stored for the version given (so a search finds it at once).

        Called outside any transaction, best without holding the store's lock (it takes it only
        to store the vectors). A record that changed or went since is left to the projector
        (False); a vector the projector stored of a later version is never replaced by an older
        one; a store that cannot take the vectors answers False too (the projector retries).
        """
        if not records or not self.loaded or self.problem is not None or self.vectors.db is None:
            return False
        try:
            vectors = self.embedder.embed([entity_text(r) for r in records])
        except EmbeddingsUnavailableError as error:
            self.problem = str(error)
            return False

        def write(txn: Any) -> bool:
            graph = LmdbGraph(txn, self.views.tables)
            stored = self.vectors.versions(txn, [r.stream for r in records])
            put = []
            for record, vector in zip(records, vectors, strict=True):
                live = graph.entity_by_stream(record.stream)
                if live is None or live.version != record.version:
                    return False  # changed (or forgotten) since: the projector embeds what it says now
                if stored.get(record.stream, 0) < record.version:
                    put.append((record.stream, record.workspace, record.version, vector))
            self.vectors.store(txn, put, (), None)
            return True

        if self.views.env.readonly:
            return False
        try:
            with self.lock:
                return bool(self.views.env.write(write))
        except (EventStoreError, ProjectionError):
            return False  # derived data: the projector stores them when the store takes writes again

    def catch_up(self, progress: Progress | None = None) -> int:
        """Embed until the vectors are current with the head; return their checkpoint.

        Raises:
            EmbeddingsUnavailableError: If the embedder cannot embed.
        """
        while True:
            checkpoint, head = self.step()
            if progress is not None:
                progress(checkpoint, head)
            if checkpoint >= head:
                return checkpoint

    def rewind(self) -> None:
        """Check the vectors against the whole log again (after a rebuild), keeping those whose
        entity version and model are unchanged: `catch_up` then embeds only what differs."""
        with self.lock:
            self.views.env.write(self.vectors.rewind)

    def forget(self) -> None:
        """Drop every stored vector (of every model), to embed the store again from the start."""
        with self.lock:
            self.views.env.write(self.vectors.forget)

    def settle(self, backlog: int = SETTLE) -> None:
        """Embed now what the projector has not yet, if it is at most `backlog` events, so that
        a query sees the writes just made; a longer backlog is left to the projector, and so
        is everything while the embedder is failing (the query says how far embeddings reach).

        It runs under the caller's hold of the store (a read), so the backlog is kept short.
        """
        if self.problem is not None and self._thread is not None:
            return  # the projector retries it on its own schedule
        with self.lock:
            with self.views.snapshot() as snapshot:
                behind = snapshot.graph.position - self.vectors.checkpoint(snapshot.graph.txn)
            if 0 < behind <= backlog:
                try:
                    self.step()
                except (EmbeddingsUnavailableError, EventStoreError) as error:
                    self.problem = str(error)

    def start(self, progress: Progress | None = None) -> None:
        """Run the projector in a background thread until `stop`."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, args=(progress,), name="embeddings", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        """Stop the projector (after the step under way)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    def _run(self, progress: Progress | None) -> None:
        _yield_to_requests()
        wait, last = POLL, -1
        while not self._stop.wait(wait):
            try:
                self.embedder.load()
                self.loaded = True
                checkpoint, head = self.step()
            except EmbeddingsUnavailableError as error:
                self.problem = str(error)
                wait = RETRY
                continue
            except Exception as error:  # noqa: BLE001 (the projector must outlive any one failure)
                self.problem = f"the embedding projector failed: {error!r}"
                wait = RETRY
                continue
            if progress is not None and checkpoint != last:
                progress(checkpoint, head)
            last = checkpoint
            wait = 0.0 if checkpoint < head else POLL

    # --- queries --------------------------------------------------------------------------


    def nearest(self, snapshot: Snapshot, workspace: str, query: str, depth: int) -> tuple[list[Match], int]:
        """The `depth` entities of `workspace` nearest `query`, and the position embedded through.

        A match may be of an older version of its entity; the caller checks.

        Raises:
            UnavailableError: If the query cannot be embedded, or nothing is embedded yet.
        """
        vector = self._embedded_query(query)
        checkpoint = self.vectors.refresh(snapshot.graph.txn, snapshot.log)
        if checkpoint == 0 and snapshot.graph.position > 0:
            raise UnavailableError(
                "Nothing is embedded yet: semantic search answers once the embedding projector has "
                f"caught up with the log (at position 0 of {snapshot.graph.position}; a large store takes "
                "minutes the first time). Meanwhile use mode ranked or fuzzy."
            )
        return self.vectors.nearest(workspace, vector, depth), checkpoint

    def _embedded_query(self, query: str) -> Any:
        vector = self._queries.get(query)
        if vector is None:
            try:
                vector = self.embedder.embed([query])[0]
            except EmbeddingsUnavailableError as error:
                raise UnavailableError(f"Semantic search is unavailable: {error}. "
                                       "The other modes (substring, ranked, fuzzy) work.") from None
            self._queries[query] = vector
            self.loaded = True
            while len(self._queries) > QUERIES_KEPT:
                self._queries.popitem(last=False)
        else:
            self._queries.move_to_end(query)
        return vector


def _yield_to_requests() -> None:
    """Lower this thread's scheduling priority (Linux: a thread is its own task), so that the
    embedding a write sets off never slows the requests that follow it."""
    try:
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), NICE)
    except (AttributeError, OSError):
        pass  # elsewhere, or not allowed: embeddings simply share the CPU
