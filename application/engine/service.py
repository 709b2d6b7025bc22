"""The memory: a log and its views, and one call per tool, whatever the transport.

The MCP server, the command line and the tests use it alike. A write is parsed, checked
against its caller's grants and run as one command in one write transaction
(`commands.commit`); a read runs under the store's lock, or beside the writer in a read
snapshot of its own (`Memory.alongside`).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import msgspec
from chronograph.application.engine.access import calling, check
from chronograph.application.engine.arguments import Args, parse, parse_checked
from chronograph.application.engine.background import IMAGE_IDLE, following, keeping
from chronograph.application.engine.commands import Written, commit, unanswered
from chronograph.application.engine.config import model_cache
from chronograph.application.engine.erasing import Owed, finish_scrubbing, scrub_store
from chronograph.application.engine.exportdir import ExportDir
from chronograph.application.engine.meaning import SEMANTIC_MODES, by_meaning
from chronograph.application.engine.outputs import Out
from chronograph.application.engine.principal import LOCAL_PRINCIPAL, Principal
from chronograph.application.engine.registry import TEAM, Tool, find
from chronograph.application.engine.storelock import StoreLock
from chronograph.application.engine.stores import open_store
from chronograph.application.engine.timeline import Timeline
from chronograph.eventstore import (
    EventStoreError,
    Scrubbed,
)
from chronograph.eventstore.keys import digest
from chronograph.eventstore.lmdb import resident
from chronograph.projections import Progress, ProjectionError, Views, paused_gc
from chronograph.projections.errors import EmbeddingsUnavailableError
from chronograph.projections.live.seeding import SPACING as SEED_SPACING
from chronograph.projections.search.embedder import open_embedder
from chronograph.projections.team.view import TeamView
from msgspec import UNSET

if TYPE_CHECKING:
    from chronograph.application.engine.semantic import Semantic

__all__ = ["ALONGSIDE", "IMAGE_IDLE", "Memory", "Written"]

ALONGSIDE = frozenset({
    "open_nodes", "read_graph", "search_nodes", "get_graph_summary", "list_workspaces", "get_related_entities",
    "get_entity_history", "get_relation_history", "get_audit_log", "read_context", "export_graph",
})
"""The reads that run alongside each other and the writer, each in its own read snapshot of a
store folder (LMDB readers take no lock), when they read the present and write no file:
each was checked to touch nothing of the process but its snapshot and the word indexes
(which have a lock of their own: a read that asks them takes it before its snapshot, and
`SearchIndex` hands an index to no thread without it). Any other read takes the store's lock,
as a write does. One that finds the views behind the log (another version of Chronograph wrote
to the store) folds what they lack under the store's lock if no other thread holds it
(`Views.snapshot`, `StoreLock.if_free`), never waiting for it."""

RESIDENT = 192 << 20
"""The store pages a process preparing the search images keeps resident before it gives them
back (see `eventstore.lmdb.resident`)."""
CLOSING_PATIENCE = 0.5
"""Seconds a closing store waits for a log out of reach (its database gone) before it gives up
keeping its search images; the next process builds them instead."""


class Memory:
    """A knowledge-graph memory on the store at `path` (created if missing).

    `embeddings` chooses semantic search: "off" (the default here), "auto" (the bundled
    model if the semantic extra is installed), "local", or the URL of an OpenAI-compatible
    endpoint serving `embeddings_model`; the bundled model runs on `embedding_threads` cores
    (one leaves the others to requests; 0: all); `term_weights` lets the semantic extra's
    term weigher reorder the nearest (when it is installed). The projector does not run until
    `semantic.start()` (a server starts it) or `semantic.catch_up()`.

    Every use of the store goes through `lock`, so that other threads of the process
    (the embedding projector) can share it; the reads named in `ALONGSIDE` of a store folder
    go beside it, each in a read snapshot of its own (see `alongside`).
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        sync: bool = True,
        readonly: bool = False,
        progress: Progress | None = None,
        export_dir: Path | ExportDir | None = None,
        max_size: int | None = None,
        embeddings: str = "off",
        embeddings_model: str | None = None,
        embeddings_key: str | None = None,
        embedding_threads: int = 1,
        term_weights: bool = True,
        project_files: bool = True,
        cache: str | os.PathLike[str] | None = None,
    ) -> None:
        self.lock = StoreLock()
        self._instance = os.urandom(16)
        """What tells this open store's writers from another's (`writer_for`)."""
        self._follower: threading.Thread | None = None
        self._keeper: threading.Thread | None = None
        self.last_call = time.monotonic()
        """When the last tool call of this process began (the image keeper waits for quiet)."""
        self.stopping = threading.Event()
        """Set when the memory closes: its background threads stop."""
        self.followed = 0
        """The log position the follower last brought the views to."""
        self.reachable: str | None = None
        """Why the database of the store cannot be reached now, as the follower last found (None: it can)."""
        self.export_dir = ExportDir(export_dir) if isinstance(export_dir, Path) else export_dir
        """Where export_graph may write files (None: nowhere)."""
        self.project_files = project_files
        """Whether n2n's export may write a Markdown file inside the project root a client names."""
        self.reply_limit: int | None = None
        """The largest answer a read may give, in bytes of its reply (a server's --max-reply; None:
        any): a query that can tell early that its answer is larger refuses before building it."""
        self._answering = threading.local()
        """The handler answering this thread's call and its reply limit (`call`, see `limit_for`):
        reads run in several threads at once over HTTP."""
        self.owed = Owed()
        """What this process's erasures still owe: a scrub, answers of commits cut off (`erasing`)."""
        self.log, self.cache = open_store(path, sync=sync, readonly=readonly, max_size=max_size, cache=cache)
        """The log, and the local environment of the views when the log is in a database."""
        try:
            self.views = Views(self.log, progress=progress, cache=self.cache)
            self.timeline = Timeline(self.log, self.views)
            self.teams = TeamView()
            """The team memory (the Agent Memory surface), folded in memory."""
            self.semantic: Semantic | None = None
            """Semantic search, when an embedder is configured and installed."""
            self.semantic_off = (
                "Semantic search is off for this server (--embeddings off). Start it with "
                "--embeddings local (needs: pip install 'chronograph[semantic]') or an endpoint URL."
            )
            """Why `semantic` is None."""
            try:
                embedder = open_embedder(embeddings, model=embeddings_model, api_key=embeddings_key,
                                         threads=embedding_threads, cache=model_cache())
            except EmbeddingsUnavailableError as error:
                self.semantic_off = f"Semantic search is unavailable: {error}."
                embedder = None
            if embedder is not None:
                from chronograph.application.engine.semantic import Semantic  # noqa: PLC0415 (only with an embedder)
                from chronograph.projections.search.splade import open_weigher  # noqa: PLC0415

                self.semantic = Semantic(self.views, embedder, self.lock, open_weigher() if term_weights else None)
            if not readonly:
                finish_scrubbing(self)
        except BaseException:
            self._close_store()
            raise
        self.lock.on_first = self.views.refresh
        self.views.guard = self.lock.if_free
        self.before_call: list[Callable[[Memory, Tool, Any], None]] = []
        """Work before a tool runs (given its parsed arguments), outside the store's lock: an
        adapter's, such as folding n2n's project files into the log first."""
        self.after_commit: list[Callable[[Memory, Tool, Any, Written], None]] = []
        """Work right after a command that changed the store committed, under the store's lock and
        before what the command does then (an erasure's scrub, which may wait seconds for readers):
        an adapter's that should not wait for it (rewriting n2n's project files, so that a process
        killed meanwhile does not leave them holding what was erased). It must not raise, nor write
        to the store (an erasure's old pages are not scrubbed yet); `after_write` follows."""
        self.after_write: list[Callable[[Memory, Tool, Any, Written], Written | None]] = []
        """Work after a command committed, outside the store's lock (mirroring project files); one
        may return the call's result completed (what its answer says of the work), or None."""

    def follow(self) -> None:
        """Keep the views of a database store current with what other servers write: a thread
        that wakes on the log's notifications (or every second) and folds what is new. Without
        it, a process's views catch up at its own writes only. Nothing to do for a store folder:
        every process reads the one set of views there."""
        if self.cache is None or self._follower is not None:
            return
        self._follower = threading.Thread(target=following, args=(self,), name="follower", daemon=True)
        self._follower.start()

    def keep_images(self, idle: float = IMAGE_IDLE) -> None:
        """Keep the search indexes' images current without a tool call paying for it: a thread
        that, once no call has begun for `idle` seconds, brings the indexes this process holds
        to the head and saves the images of those whose entities changed. So a server ended by
        SIGKILL after writes leaves the next one an image to load, not a stretch of log to
        re-index. A server calls it; a read-only store keeps nothing."""
        if self._keeper is not None or self.log.readonly:
            return
        self._keeper = threading.Thread(target=keeping, args=(self, idle), name="images", daemon=True)
        self._keeper.start()

    def keep_images_now(self) -> int:
        """Bring the indexes this process holds to the head and save the images of those whose
        entities changed; return how many were saved."""
        with self.lock:
            if self.stopping.is_set():
                return 0
            with self.views.search.lock, self.views.snapshot() as snapshot:  # the indexes' lock first: see SearchIndex
                for workspace in self.views.search.loaded():
                    self.views.search_index(snapshot, workspace)
            return self.views.search.save(every=None)

    def keep_seed_now(self, spacing: int | None = None) -> bool:
        """Keep a seed of this cache's views in a database store, if they stand `spacing` events
        (default `seeding.SPACING`) past the newest it keeps, so that new servers' caches start
        from it rather than fold the whole log; return whether one was kept. Abandoned if the
        memory closes meanwhile."""
        if self.cache is None or self.stopping.is_set():
            return False
        return self.views.keep_seed(SEED_SPACING if spacing is None else spacing, stop=self.stopping.is_set)

    def checkpoint(self) -> int:
        """Where the views of this process stand (read from the local cache alone)."""
        with self.lock, self.views.env.read() as txn:
            return self.views.tables.checkpoint(txn)

    def catch_up(self) -> None:
        """Bring the views to what the log holds now, for a decision a long command (an import)
        makes from them between its writes: a database store's views follow other servers only
        with a follower (`follow`) or at this process's own writes, and a refused write's catch-up
        is rolled back with it. A store folder's views are the store's own: always current."""
        if self.cache is not None:
            with self.lock:  # (taken from free, it folds another server's erasure as a write would)
                self.views.catch_up()

    def interrupt(self) -> None:
        """Cut short the calls waiting for the right to write to the store (a database log's lock
        another server holds): each is refused, having written nothing, and no new one waits. For
        a server asked to stop, whose calls in flight must end before it closes the store."""
        self.log.interrupt()

    def close(self) -> None:
        """Stop the embedding projector and the follower, keep the search indexes' images, close
        the store (a call still waiting for the right to write is cut short: `interrupt`)."""
        self.stopping.set()
        self.interrupt()
        if self._follower is not None:
            self._follower.join(timeout=10)
        if self.semantic is not None:
            self.semantic.stop()
        if self.reachable is None:  # (a follower that cannot reach the database says so: no image then)
            try:  # the image keeper, if it is saving, has finished once the lock is taken
                with self.log.patience(CLOSING_PATIENCE), self.lock:
                    self.views.search.save(every=None)  # only what changed: a whole image of 1M entities takes 1 s
            except Exception:  # noqa: BLE001 (an image is an optimisation: the next process builds the index instead)
                pass
        with self.lock.bare():  # closing needs nothing of a log out of reach
            self._close_store()

    def _close_store(self) -> None:
        self.log.close()
        if self.cache is not None:
            self.cache.close()

    def prepare_search(self) -> int:
        """Index every workspace's words and keep the images in the store, so that the first
        search of the next server loads them instead of reading every entity; return how many.
        A workspace whose index this process does not hold is indexed a part at a time (see
        `Views.prepare_search`), the store pages it read given back as it goes."""
        with self.lock:
            return self.views.prepare_search(between=lambda: resident.release(RESIDENT))

    def scrub(self, needles: Sequence[bytes] = (), timeout: float = 10.0) -> Scrubbed:
        """Overwrite what erasures left in the store's files (see `erasing.scrub_store`). Call it
        holding the lock, outside any transaction."""
        return scrub_store(self, needles, timeout)

    def store_bytes(self) -> int:
        """What the store takes on disk (log and views)."""
        return self.log.stored_bytes()

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # --- calls ----------------------------------------------------------------------------

    def call(self, tool: Tool | str, arguments: dict[str, Any], *, actor: str = "unknown",
             principal: Principal = LOCAL_PRINCIPAL) -> Written:
        """Run `tool` with raw `arguments` for `principal`; a command's events are recorded as
        `actor`'s (the client's own name) and `principal`'s (who was authenticated).

        Raises:
            ForbiddenError: If `principal` lacks a grant the call needs; nothing was read or written.
            ChronographError: Invalid arguments, a missing item, a stale expectedVersion,
                a reused requestId or a full store; nothing was written.
        """
        spec = find(tool)
        if spec.writes:
            return self.write(spec, arguments, actor=actor, principal=principal)
        return Written(self.read(spec, arguments, principal=principal), changed=False)

    def writer_for(self, actor: str, connection: str | None = None) -> str:
        """Which connection writes, as the team memory's conflicts tell writers apart when neither
        createdBy nor a session does: this open store (one per process), the client's connection
        to it (a server's: its MCP session over HTTP) and the client's name, digested, so that no
        connection's id is stored and two processes or connections never share one."""
        parts = (connection or "", actor)
        return digest(self._instance + msgspec.msgpack.encode(parts), 8).hex()

    def write(
        self, tool: Tool | str, arguments: dict[str, Any], *, actor: str, correlation_id: str | None = None,
        principal: Principal = LOCAL_PRINCIPAL, checked: str | None = None, writer: str | None = None,
        checked_as: type[Args] | None = None,
    ) -> Written:
        """Run the command `tool` with raw `arguments` for `principal`, recording `actor` and
        `principal`'s name on its events, and, for a team tool (the only events that keep it),
        `writer` (default: `writer_for(actor)`): which connection wrote them.

        `correlation_id` (default: a new one) lets several calls share one, as an import does.
        `checked` names a list of `arguments` made of items the tool's parser accepted one by one
        before (an import's): only their types and limits are checked again (`parse_checked`), as
        `checked_as` has them if given: a subclass of the tool's arguments whose items may hold
        more than a tool call carries (an import's entity types and observations, which the store
        holds whatever their size).

        Raises:
            ForbiddenError: If `principal` lacks a grant the call needs (see `engine/access.py`);
                nothing was read or written.
            ChronographError: Invalid arguments, a missing item, a stale expectedVersion,
                a reused requestId or a full store; nothing was written.
        """
        self.last_call = time.monotonic()
        spec = find(tool)
        if checked_as is not None and not (checked is not None and issubclass(checked_as, spec.arguments)):
            raise ValueError(f"{spec.name}: checked_as must be a subclass of its arguments, with `checked`")
        args = parse(spec.name, arguments, spec.arguments) if checked is None else \
            parse_checked(spec.name, arguments, checked_as or spec.arguments, checked)
        workspaces = check(principal, spec, args)  # before anything runs: a refusal reads and writes nothing
        with calling(principal):
            for before in self.before_call:
                before(self, spec, args)
            if spec.reads and getattr(args, "action", None) in spec.reads:
                return Written(self._answer(spec, args), changed=False, workspaces=workspaces)
            written = commit(self, spec, args, actor=actor, correlation_id=correlation_id,
                             principal=principal.name,
                             writer=(writer or self.writer_for(actor)) if spec.name in TEAM else None)
            written = msgspec.structs.replace(written, workspaces=workspaces)
            for after in self.after_write:
                written = after(self, spec, args, written) or written
            return written

    def read(self, tool: Tool | str, arguments: dict[str, Any], *,
             reply_limit: int | None | Literal["server"] = "server", principal: Principal = LOCAL_PRINCIPAL) -> Out:
        """Run the query `tool` with raw `arguments` for `principal` (on the live views, or as of
        then); its reply may take `reply_limit` bytes (by default the server's, `self.reply_limit`).

        Raises:
            ForbiddenError: If `principal` lacks a grant the call needs; nothing was read.
            ChronographError: If the arguments are invalid or name something unknown.
        """
        self.last_call = time.monotonic()
        spec = find(tool)
        args = parse(spec.name, arguments, spec.arguments)
        if spec.writes and getattr(args, "action", None) not in spec.reads:
            raise ValueError(f"{spec.name} is a command: run it with Memory.write or Memory.call")
        check(principal, spec, args)
        with calling(principal):
            for before in self.before_call:
                before(self, spec, args)
            return self._answer(spec, args, self.reply_limit if reply_limit == "server" else reply_limit)

    def alongside(self, spec: Tool, args: Any) -> bool:
        """Whether the read `spec` with `args` runs beside other reads and the writer rather than
        under the store's lock: a read in `ALONGSIDE` of the present (no asOf), writing no file
        and asking no embedder, on a store folder (a database store's views catch up with
        erasures under the lock; its reads keep to it)."""
        return (
            spec.name in ALONGSIDE and self.cache is None
            and getattr(args, "as_of", UNSET) is UNSET and getattr(args, "output_path", UNSET) is UNSET
            and getattr(args, "mode", UNSET) not in SEMANTIC_MODES
        )

    def limit_for(self, handler: Callable[..., Any]) -> int | None:
        """The reply limit of the call being answered in this thread, if `handler` answers it (a
        tool built on another's handler shapes its own answer: the inner one's size says nothing
        of it)."""
        answering = getattr(self._answering, "call", None)
        return answering[1] if answering is not None and answering[0] is handler else None

    def _answer(self, spec: Tool, args: Any, reply_limit: int | None = None) -> Out:
        query, semantic = by_meaning(spec.name, args), self.semantic
        if query is None or semantic is None:
            return self._answered(spec, args, reply_limit)
        try:
            semantic.prepare(query)  # the embedding outside the store's lock (see `Semantic.prepare`)
            return self._answered(spec, args, reply_limit)
        finally:
            semantic.prepared()

    def _answered(self, spec: Tool, args: Any, reply_limit: int | None) -> Out:
        if not self.alongside(spec, args):
            try:
                self.lock.acquire()  # (taken from free, it catches the views up with the log where they must)
            except (EventStoreError, ProjectionError) as error:
                raise unanswered(error) from None
            try:
                with self.views.search.lock:
                    output = self._handled(spec, args, reply_limit)
                    self._save_search()
                    return output
            finally:
                self.lock.release()
        output = self._handled(spec, args, reply_limit)  # one that asks the word indexes takes their lock
        if self.views.search.due():
            try:
                free = self.lock.acquire(blocking=False)  # a write: under the lock, if free
            except Exception:  # noqa: BLE001 (taking it from free refreshes the store: the answer stands)
                return output
            if free:
                try:
                    self._save_search()
                finally:
                    self.lock.release()
        return output

    def _handled(self, spec: Tool, args: Any, reply_limit: int | None) -> Out:
        outer = getattr(self._answering, "call", None)
        self._answering.call = (spec.handler, reply_limit)
        try:
            with paused_gc():  # a whole graph's output forms no cycles; scanning it halved the speed
                return spec.handler(self, args)
        except (EventStoreError, ProjectionError) as error:
            raise unanswered(error) from None
        finally:
            self._answering.call = outer

    def _save_search(self) -> None:
        """Keep the images of indexes that ran far ahead of them, after a read (outside it): an
        optimisation, so whatever stops it (a full disk, a read-only filesystem, a store that
        could not be reopened) leaves the answer standing; the next save, or process, keeps them."""
        try:
            self.views.search.save()
        except Exception:  # noqa: BLE001
            pass

