"""Semantic search: the embedding projector behind the log (the entities nearest a query are
`nearness`'s).

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
import sys
import threading
from collections.abc import Callable, Sequence
from typing import Any

from chronograph.application.engine.nearness import Nearness
from chronograph.application.engine.storelock import StoreLock
from chronograph.application.errors import UnavailableError
from chronograph.eventstore import EventStoreError
from chronograph.eventstore.lmdb import resident
from chronograph.projections import EntityRecord, LmdbGraph, Views
from chronograph.projections.errors import EmbeddingsUnavailableError, ProjectionError, TermWeightsUnavailableError
from chronograph.projections.search.embedder import Embedder
from chronograph.projections.search.passages import PASSAGES, embed_records
from chronograph.projections.search.splade import LocalSplade
from chronograph.projections.search.vectors import Parts, Vectors, touched_entities

__all__ = ["STEP", "Semantic"]

POLL = 0.25
"""Seconds between looks at the log's head while there is nothing to embed."""
START_DELAY = 2.0
"""Seconds after the start before the projector's first look: a session's opening (a spawn's
initialize and first calls, half a second) is served before a backlog has it load the model
(100 MB, a second of a core) and take turns with the requests."""
STEP = 128
"""Entities embedded per step (the checkpoint moves once a step)."""
CHUNK = 32
"""Entities embedded per commit: what a stop may cost of work under way."""
STOP_WAIT = 0.1
"""Seconds a closing server waits for the chunk under way (whatever is left is not stored)."""
SETTLE = STEP
"""Entities a query embeds itself before it answers, when the writes behind the vectors touch no
more (more are left to the projector): one step's worth, so that one write of up to that many
entities is found by the search right after it."""
SETTLE_READ = 1024
"""Events a query reads at most to count the entities behind the vectors (a longer backlog, such as
a store just imported, is left to the projector without reading it)."""
RETRY = 30.0
"""Seconds before an embedder that failed is tried again."""
RESIDENT = 128 << 20
"""Bytes of the store's pages (and libraries') the server keeps resident while the projector
works through a backlog; past it, the store's are given back (see `resident`): embedding
50k entities read them all, 144 MB of the server's RSS. They are given back before the
model loads too: at 50k its load on top of the pages 100 searches read was the peak."""
NICE = 10
"""The projector thread's niceness (0 is normal, 19 the lowest priority)."""

Progress = Callable[[int, int], None]
"""(events embedded through, head): called after each step of a catch-up."""


class Semantic:
    """The vectors of one store under one embedder, and the projector that keeps them current."""

    def __init__(self, views: Views, embedder: Embedder, lock: StoreLock, weigher: LocalSplade | None = None) -> None:
        self.views = views
        self.embedder = embedder
        self.weigher = weigher
        """The term weigher whose weights the parts keep beside the vectors (None: none installed)."""
        self.lock = lock
        plain = Vectors(views.env, embedder.model + PASSAGES)
        terms = LocalSplade.model if weigher is None else weigher.model
        weighted = Vectors(views.env, f"{embedder.model}{PASSAGES}+{terms}")
        self.vectors = plain if weigher is None else weighted
        """The vectors the projector keeps current (with term weights, under an id of their own)."""
        self.former: Vectors | None = weighted if weigher is None else plain
        """The vectors this model keeps the other way, with term weights or without (a store
        embedded before the weigher was installed, or by a process with or without it): searched
        while the projector's are behind them (by their cosines alone), and their parts lend
        their vectors to the projector, so that only weights are made, or nothing. `replay
        --rebuild` drops them (`drop_former`); a server never does, as another process on the
        store may use them."""
        views.env.on_reopen(self._reopened)
        self.problem: str | None = None
        """Why the embedder failed last (None while it works)."""
        self.loaded = False
        """Whether the embedder has loaded and embedded once (a write embeds in the call only then)."""
        self.embedded = 0
        """Entities this process has embedded (by the projector)."""
        self.nearness = Nearness(self)
        """The entities nearest a query, read from these vectors"""
        self._settled = threading.local()
        """Whether this thread's call settled already (`prepare`: `done`)."""
        self.closed = False
        """Set (under the lock) when the store closes: nothing is stored after it."""
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _reopened(self) -> None:
        for vectors in (self.vectors, self.former):
            if vectors is not None:
                vectors.db = self.views.env.open_db(Vectors.NAME)

    # --- the projector --------------------------------------------------------------------

    def step(self, limit: int = STEP) -> tuple[int, int]:
        """Embed the entities changed in the next stretch of the log; return (checkpoint, head).

        The vectors are committed a `CHUNK` at a time, ahead of the checkpoint, which moves
        with the last chunk: a stop asked for meanwhile (`stop`) ends the step after the chunk
        under way, and what was embedded is kept; the next step (here or in the next process)
        finds those vectors current and embeds only the rest of the stretch.

        Raises:
            EmbeddingsUnavailableError: If the embedder cannot embed (nothing more is stored).
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
            parts = self._parts(txn, todo)
        todo.sort(key=lambda r: sum(map(len, r.observations)))  # similar lengths in a chunk pad little
        if todo and not self.loaded:
            resident.release()  # the model loads next: the store's pages make room for it first
        chunks = [todo[at:at + CHUNK] for at in range(0, len(todo), CHUNK)] or [[]]
        for number, chunk in enumerate(chunks):
            if self._stop.is_set():
                return start, head  # what was embedded so far is kept; the checkpoint stays
            last = number == len(chunks) - 1
            try:
                embedded = embed_records(self.embedder, chunk, parts, self.weigher) if chunk else []
            except TermWeightsUnavailableError as error:
                self.without_weights(error)
                return start, head  # the next step embeds without them
            self.embedded += len(chunk)
            self.loaded = self.loaded or bool(chunk)
            put = [(r.stream, r.workspace, r.version, vector, made)
                   for r, (vector, made) in zip(chunk, embedded, strict=True)]
            if not self._store(start, erasures, put, drop if last else (), stop if last else None):
                return start, head  # another process got there first, or something was forgotten
        self.problem = None
        return stop, head

    def _store(self, start: int, erasures: int, put: list[tuple[Any, ...]], drop: Sequence[str],
               checkpoint: int | None) -> bool:
        """Commit vectors read at checkpoint `start` (and, with `checkpoint`, move it); False if the
        stretch was embedded by another process, something was forgotten since, or the store closed."""

        def write(txn: Any) -> bool:
            if self.vectors.checkpoint(txn) != start:
                return False  # another process embedded this stretch first
            if self.views.erasures_in(txn) != erasures:
                return False  # what was read may have been forgotten since: embed it again
            self.vectors.store(txn, put, drop, checkpoint)
            return True

        if self.vectors.db is None or self.views.env.readonly:
            return True
        with self.lock:
            if self.closed:
                return False
            return bool(self.views.env.write(write))

    def drop_former(self) -> bool:
        """Drop the vectors this model kept without term weights if the weighted ones are current
        with the head (after `replay --rebuild` with the weights on); return whether they were
        dropped. Weighted vectors are never dropped so: they hold the plain ones' rows too, and a
        rebuild with the weights off (or without the extra) would throw away what a server with
        them would have to weigh again."""
        with self.lock:
            former = self.former
            if self.weigher is None or former is None or former.db is None or self.views.env.readonly or self.closed:
                return False
            with self.views.snapshot() as snapshot:
                if self.vectors.checkpoint(snapshot.graph.txn) < snapshot.graph.position:
                    return False
            self.views.env.write(former.clear)
            return True

    def without_weights(self, error: Exception) -> None:
        """Go on without the term weigher, which cannot run: the vectors kept without weights
        become the projector's and the searches'. Said once on stderr."""
        with self.lock:
            if self.weigher is None or self.former is None:
                return
            self.weigher, self.vectors, self.former = None, self.former, self.vectors
            self.nearness.forget_queries()
        print(f"chronograph: term weights are off for this server: {error}", file=sys.stderr)

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
            with self.lock, self.views.snapshot() as snapshot:
                parts = self._parts(snapshot.graph.txn, records)
            vectors = embed_records(self.embedder, records, parts, self.weigher)
        except TermWeightsUnavailableError as error:
            self.without_weights(error)
            return False
        except EmbeddingsUnavailableError as error:
            self.problem = str(error)
            return False

        put: list[tuple[Any, ...]] = []

        def write(txn: Any) -> bool:
            graph = LmdbGraph(txn, self.views.tables)
            stored = self.vectors.versions(txn, [r.stream for r in records])
            put.clear()
            for record, (vector, made) in zip(records, vectors, strict=True):
                live = graph.entity_by_stream(record.stream)
                if live is None or live.version != record.version:
                    return False  # changed (or forgotten) since: the projector embeds what it says now
                if stored.get(record.stream, 0) < record.version:
                    put.append((record.stream, record.workspace, record.version, vector, made))
            self.vectors.store(txn, put, (), None)
            return True

        if self.views.env.readonly:
            return False
        try:
            with self.lock:
                if self.closed or not self.views.env.write(write):
                    return False
                for searched in (self.vectors, self.former):  # whichever a search reads (`Nearness._searched`)
                    if searched is not None:
                        searched.took(put)  # found by this process's searches at once
                return True
        except (EventStoreError, ProjectionError):
            return False  # derived data: the projector stores them when the store takes writes again

    def _parts(self, txn: Any, records: Sequence[EntityRecord]) -> dict[str, list[Parts]]:
        """The stored parts of each of `records` that has some, under this id and the other (a
        text either holds is not embedded again: a change made by a process keeping the other
        id lends its vectors; where only the other id's parts have a text, only weights are made)."""
        found: dict[str, list[Parts]] = {}
        ids = [v for v in (self.vectors, self.former) if v is not None]
        for record in records:
            kept = [p for v in ids if (p := v.parts(txn, record.stream)) is not None]
            if kept:
                found[record.stream] = kept
        return found

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
        entity version is unchanged (and every other model's: see `Vectors.rewind`): `catch_up`
        then embeds only what differs."""
        with self.lock:
            self.views.env.write(self.vectors.rewind)

    def forget(self) -> None:
        """Drop every stored vector (of every model), to embed the store again from the start."""
        with self.lock:
            self.views.env.write(self.vectors.forget)

    def settle(self, backlog: int = SETTLE) -> None:
        """Embed now what the projector has not yet, if it touches at most `backlog` entities (in
        at most `SETTLE_READ` events), so that a query sees the writes just made; a longer backlog
        is left to the projector, and so is everything while the embedder is failing (the query
        says how far embeddings reach).

        It embeds holding the store only if its caller does: a search runs it first without
        (`prepare`), so a slow embedder holds up no write; under the search's hold it then finds
        at most what was written meanwhile.
        """
        if self.problem is not None and self._thread is not None:
            return  # the projector retries it on its own schedule
        if getattr(self._settled, "done", False):
            return  # this call settled before it took the store (`prepare`)
        with self.lock, self.views.snapshot() as snapshot:
            start, head = self.vectors.checkpoint(snapshot.graph.txn), snapshot.graph.position
            if not 0 < head - start <= SETTLE_READ:
                return
            touched, _ = touched_entities(snapshot.log, start + 1, head, backlog + 1)
        if len(touched) <= backlog:
            try:
                self.step(backlog + 1)  # to the head; reads and stores under the store's lock, embeds outside it
            except (EmbeddingsUnavailableError, EventStoreError) as error:
                self.problem = str(error)

    def prepare(self, query: str) -> None:
        """Do before a search by meaning takes the store what it would do holding it: embed
        `query` (kept for the search) and `settle` a short backlog. An embedder that is slow (an
        endpoint answers within 30 s) then holds up no other call; a failure is the search's to
        say."""
        try:
            self.nearness.asked(query)
            self.settle()
        except UnavailableError:
            pass  # remembered: the search under the store says so without asking again
        self._settled.done = True  # settled, or the embedder fails: the search asks it nothing more

    def prepared(self) -> None:
        """The call `prepare` was for is over: the next one embeds and settles afresh."""
        self._settled.done = False
        self.nearness.forget_failure()

    def start(self, progress: Progress | None = None) -> None:
        """Run the projector in a background thread until `stop`."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, args=(progress,), name="embeddings", daemon=True)
            self._thread.start()

    def stop(self, wait: float | None = STOP_WAIT) -> None:
        """Stop the projector: after the chunk under way if it ends within `wait` seconds (None:
        however long it takes), else without storing it. What was committed before stays, and
        the next start goes on from there."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(wait)
            if not self._thread.is_alive():
                self._thread = None
        with self.lock:
            self.closed = True  # a chunk still under way is not stored: the store is closing

    def _run(self, progress: Progress | None) -> None:
        _yield_to_requests()
        wait, last = START_DELAY, -1
        while not self._stop.wait(wait):
            try:
                checkpoint, head = self.step()  # the model loads when there is something to embed
            except EmbeddingsUnavailableError as error:
                self.problem = str(error)
                wait = RETRY
                continue
            except Exception as error:  # noqa: BLE001 (the projector must outlive any one failure)
                self.problem = f"the embedding projector failed: {error!r}"
                wait = RETRY
                continue
            if checkpoint != last:
                if progress is not None:
                    progress(checkpoint, head)
                resident.release(RESIDENT)  # the pages of the entities it read leave the server's RSS
            last = checkpoint
            wait = 0.0 if checkpoint < head else POLL

def _yield_to_requests() -> None:
    """Lower this thread's scheduling priority (Linux: a thread is its own task), so that the
    embedding a write sets off never slows the requests that follow it."""
    try:
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), NICE)
    except (AttributeError, OSError):
        pass  # elsewhere, or not allowed: embeddings simply share the CPU
