"""The entities nearest a query by meaning, read from the vectors the embedding projector
(`semantic.Semantic`) keeps: a search's matches, and how near each observation of a record is.
A query is embedded once while it is kept (the most recent `QUERIES_KEPT`)."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from chronograph.application.engine.asked import Asked
from chronograph.application.errors import UnavailableError
from chronograph.projections import EntityRecord, Snapshot
from chronograph.projections.errors import EmbeddingsUnavailableError, TermWeightsUnavailableError
from chronograph.projections.search.hubs import crowding
from chronograph.projections.search.passages import digest, observation_text
from chronograph.projections.search.vectors import (
    DIGEST,
    Match,
    Vectors,
    joined_rows,
    joined_term_scores,
    load_numpy,
)

if TYPE_CHECKING:
    from chronograph.application.engine.semantic import Semantic

__all__ = ["BEHIND", "QUERIES_KEPT", "Nearness"]

QUERIES_KEPT = 256
"""Queries kept embedded (the most recent)."""
BEHIND = 1024
"""Events the projector's vectors may trail the head by and still be the ones searched, however
far the other id's are ahead (see `Nearness._searched`)."""


class Nearness:
    """Searches by meaning over the vectors of one `Semantic`."""

    def __init__(self, semantic: Semantic) -> None:
        self._semantic = semantic
        self._queries: OrderedDict[str, Asked] = OrderedDict()
        self._kept = threading.Lock()
        """Over `_queries`: searches embed their queries in threads of their own (`Semantic.prepare`)."""
        self._failed = threading.local()
        """The query this thread's call failed to embed, and why (`failed`): tried once a call."""

    def forget_queries(self) -> None:
        """Embed every query again (the weigher went away, or a benchmark wants each mode to pay)."""
        with self._kept:
            self._queries.clear()

    def forget_failure(self) -> None:
        """This thread's call is over: its next query is embedded afresh, even one that failed."""
        self._failed.failed = None

    def nearest(self, snapshot: Snapshot, workspace: str, query: str, depth: int) -> tuple[list[Match], int]:
        """The `depth` entities of `workspace` nearest `query`, and the position embedded through.

        A match may be of an older version of its entity; the caller checks.

        Raises:
            UnavailableError: If the query cannot be embedded, or nothing is embedded yet.
        """
        vector = self.asked(query).vector
        searched = self._searched(snapshot)
        checkpoint = searched.refresh(snapshot.graph.txn, snapshot.log)
        if checkpoint == 0 and snapshot.graph.position > 0:
            problem = self._semantic.problem  # (a full disk, an endpoint down: it retries, but says why it is stuck)
            raise UnavailableError(
                "Nothing is embedded yet: semantic search answers once the embedding projector has "
                f"caught up with the log (at position 0 of {snapshot.graph.position}; "
                + (f"it cannot go on now: {problem}" if problem else "a large store takes minutes the first time")
                + "). Meanwhile use mode ranked or fuzzy."
            )
        return searched.nearest(workspace, vector, depth), checkpoint

    def _searched(self, snapshot: Snapshot) -> Vectors:
        """The vectors a search reads in `snapshot`: the projector's, unless they are far behind
        those this model kept the other way (a store embedded before the weigher: until it is
        weighed, it is searched by its embeddings alone, not by what little is weighed yet).
        Only far behind: beside a process keeping the other id, each one's vectors trail the
        head by a few events, and switching ids on every burst flipped the scoring and reloaded
        the matrices (a review measured 161-319 ms a switch at 50,000 entities)."""
        txn, former, vectors = snapshot.graph.txn, self._semantic.former, self._semantic.vectors
        own = vectors.checkpoint(txn)
        if (former is None or former.db is None or former.checkpoint(txn) <= own
                or 0 < own >= snapshot.graph.position - BEHIND):
            if former is not None:
                former.unload()  # its matrices, loaded while it was searched, are not needed again
            return vectors
        return former

    def closeness(self, snapshot: Snapshot, record: EntityRecord, query: str) -> dict[str, float] | None:
        """How near `query` each observation of `record` whose vector is stored is (its cosine
        similarity, moved by its term weights: see `best_parts`), less what it shares with the
        entity's other observations (`hubs.unhubbed` among them: the turn that answers stands out of
        a session's small talk), or None: none is stored, or the query cannot be embedded. The
        query is embedded once per query (kept)."""
        parts = self._searched(snapshot).parts(snapshot.graph.txn, record.stream)
        if parts is None or not parts.digests:
            return None
        try:
            asked = self.asked(query)
        except UnavailableError:
            return None
        np = load_numpy()
        scores = np.clip(asked.parts_nearness(parts) - crowding(parts.rows(len(asked.vector))), 0.0, 1.0)
        where = {key: i for i, key in enumerate(parts.keys())}
        found = {}
        for observation in record.observations:
            row = where.get(digest(observation_text(record, observation)))
            if row is not None:
                found[observation] = float(scores[row])
        return found

    def best_parts(self, snapshot: Snapshot, records: Sequence[EntityRecord], query: str,
                   masks: Mapping[str, Sequence[bool]] | None = None) -> dict[str, tuple[float, Any]]:
        """For each of `records` whose stored parts are of its version, how near `query` its
        nearest part is (its cosine similarity, moved towards 1 by its term weights where the
        parts keep them: `Asked.nearness`) and that part's vector, in one product for all of them.
        A record's mask in `masks` (one flag a part) leaves out its parts flagged False; a record
        left no part scores 0.0, without a vector."""
        try:
            asked = self.asked(query)
        except UnavailableError:
            return {}
        streams, found = [], []
        searched = self._searched(snapshot)
        for record in records:
            parts = searched.parts(snapshot.graph.txn, record.stream)
            if parts is not None and parts.version == record.version and parts.data:
                streams.append(record.stream)
                found.append(parts)
        if not found:
            return {}
        np = load_numpy()
        sizes = [len(parts.digests) // DIGEST for parts in found]
        rows = joined_rows(found, len(asked.vector))
        cosines = rows @ asked.vector
        if asked.terms is not None:  # a part kept without term weights keeps its cosine (a term score of 0)
            cosines = asked.nearness(cosines, joined_term_scores(found, asked.dense()))
        starts = np.cumsum([0, *sizes[:-1]]).tolist()
        best: dict[str, tuple[float, Any]] = {}
        masks = masks or {}
        for stream, start, size in zip(streams, starts, sizes, strict=True):
            near = cosines[start:start + size]
            mask = masks.get(stream)
            if mask is not None and len(mask) == size:
                if not any(mask):
                    best[stream] = (0.0, None)
                    continue
                near = np.where(np.asarray(mask, dtype=bool), near, -np.inf)
            row = start + int(np.argmax(near))
            best[stream] = (float(cosines[row]), rows[row])
        return best

    def asked(self, query: str) -> Asked:
        """`query` embedded (and weighed, with a weigher), once per query while it is kept.

        Raises:
            UnavailableError: If the embedder cannot embed it.
        """
        with self._kept:
            asked = self._queries.get(query)
            if asked is not None:
                self._queries.move_to_end(query)
                return asked
        failed = getattr(self._failed, "failed", None)
        if failed is not None and failed[0] == query:
            raise failed[1]  # this call tried once already (before it took the store)
        try:
            vector = self._semantic.embedder.embed([query])[0]
        except EmbeddingsUnavailableError as error:
            refusal = UnavailableError(f"Semantic search is unavailable: {error}. "
                                       "The other modes (substring, ranked, fuzzy) work.")
            self._failed.failed = (query, refusal)
            raise refusal from None
        weigher, terms = self._semantic.weigher, None
        if weigher is not None:
            try:
                terms = weigher.query(query)
            except TermWeightsUnavailableError as error:
                self._semantic.without_weights(error)
        asked = Asked(vector, terms)
        self._semantic.loaded = True
        with self._kept:
            self._queries[query] = asked
            while len(self._queries) > QUERIES_KEPT:
                self._queries.popitem(last=False)
        return asked
