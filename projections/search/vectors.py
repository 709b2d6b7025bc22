"""Vectors: the embeddings of a store's entities, kept in LMDB under their model, searched in memory.

Each vector is stored under (model, entity stream) with the workspace and the entity
version it was computed from, as float16 (half the bytes, no loss that changes a
ranking). The store also keeps, per model, the log position its vectors are current
through. A process loads a model's vectors into one float32 matrix per workspace and
keeps them current from the log, as the word index does; an exact search over fifty
thousand rows is one matrix-vector product, a millisecond or two, so no approximate
index is kept.

Beside each entity's vector the store keeps its parts (`Parts`): one vector per text the
entity's vector was made of (its name where it says something, each observation), with a
short digest of each text. They are read only for the entities an answer returns (to say
which observations matched) and when an entity changes (to embed only the texts that are
new); they are never loaded into the matrices.

A vector may be older than its entity (the projector has not caught up yet): whoever
reads a match checks its version against the live entity, so a changed or deleted
entity is never found by what it used to say.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

import lmdb
import msgspec
from chronograph.eventstore import (
    EntityCreated,
    EntityDeleted,
    EntityForgotten,
    EntityMerged,
    EntityRenamed,
    EntityUpdated,
    LmdbEnv,
    LogReader,
    ObservationsAdded,
    ObservationsDeleted,
)
from chronograph.eventstore.keys import Stored, pack_u64, unpack_u64
from chronograph.projections.keys import VECTORS, vector_prefix

__all__ = ["ENTITY_EVENTS", "Match", "Parts", "Vectors", "joined_rows", "joined_term_scores", "load_numpy",
           "touched_entities"]

ENTITY_EVENTS = (EntityCreated, ObservationsAdded, ObservationsDeleted, EntityUpdated, EntityDeleted, EntityRenamed,
                 EntityMerged, EntityForgotten)
"""The events that change what an entity says."""


def load_numpy() -> Any:
    """numpy, imported when vectors are first made, stored or searched, not when a server starts
    (it took a fifth of a cold start's imports, and 19 MB, in a server that never embeds; every
    module of the embedding path imports it through here).

    Its BLAS runs on one thread unless the environment says otherwise (`OPENBLAS_NUM_THREADS`,
    read when numpy is first imported): this process's products are small, and a second thread
    made them slower, not faster, on two cores (the 50,000 x 384 product of a search: 8.0 ms
    against 2.3; term weights: 227 texts/s against 332), and it ran at the priority of requests
    when the projector's thread had lowered its own.

    Raises:
        ImportError: If numpy is not installed (the semantic extra is not).
    """
    global _numpy  # noqa: PLW0603 (imported once: a search calls this hundreds of times)
    if _numpy is None:
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
        import numpy  # noqa: PLC0415

        _numpy = numpy
    return _numpy


_numpy: Any = None


Match = tuple[str, int, float]
"""(entity stream, version the vector was computed from, cosine similarity)"""


class _Vector(msgspec.Struct, array_like=True, gc=False):
    workspace: str
    version: int
    data: bytes
    """float16, little-endian"""


class Parts(msgspec.Struct, array_like=True, gc=False):
    """The vectors an entity's vector was made of: one per text, with each text's digest."""

    version: int
    digests: bytes
    """`DIGEST` bytes per text, in the order of the rows"""
    data: bytes
    """float16, little-endian, one row per text"""
    term_counts: bytes = b""
    """With learned term weights (splade.py): how many each row has, uint16 little-endian"""
    term_ids: bytes = b""
    """The rows' word piece ids, one after the other (uint16 little-endian)"""
    term_weights: bytes = b""
    """Their weights, a byte each (steps of 1/`splade.STEP`)"""

    def rows(self, dimensions: int) -> Any:
        """The vectors, float32, one row per text."""
        np = load_numpy()
        return np.frombuffer(self.data, dtype="<f2").astype(np.float32).reshape(-1, dimensions)

    def keys(self) -> list[bytes]:
        """The digest of each row's text."""
        return [self.digests[i:i + DIGEST] for i in range(0, len(self.digests), DIGEST)]

    def term_rows(self) -> list[tuple[Any, Any]] | None:
        """Each row's term weights (ids, byte weights), or None if the parts have none."""
        if not self.term_counts:
            return None
        np = load_numpy()
        counts = np.frombuffer(self.term_counts, dtype="<u2")
        ids = np.frombuffer(self.term_ids, dtype="<u2")
        weights = np.frombuffer(self.term_weights, dtype=np.uint8)
        ends = np.cumsum(counts).tolist()
        return [(ids[end - count:end], weights[end - count:end])
                for count, end in zip(counts.tolist(), ends, strict=True)]

    def term_scores(self, query: Any) -> Any:
        """Each row's term score against a query's term weights (float32, one per word piece),
        or None if the parts have none: the dot product of the two weightings."""
        if not self.term_counts:
            return None
        np = load_numpy()
        counts = np.frombuffer(self.term_counts, dtype="<u2")
        ids = np.frombuffer(self.term_ids, dtype="<u2")
        products = query[ids] * np.frombuffer(self.term_weights, dtype=np.uint8)
        rows = np.repeat(np.arange(len(counts)), counts)
        return np.bincount(rows, weights=products, minlength=len(counts)) / TERM_STEP


def joined_rows(found: list[Parts], dimensions: int) -> Any:
    """The rows of every parts of `found`, one after the other (float32): one conversion for all."""
    np = load_numpy()
    return np.frombuffer(b"".join(parts.data for parts in found), dtype="<f2").astype(np.float32).reshape(
        -1, dimensions)


def joined_term_scores(found: list[Parts], query: Any) -> Any:
    """`Parts.term_scores` of every parts of `found`, one after the other, in one pass (0 for the
    rows of parts kept without term weights)."""
    np = load_numpy()
    counts = np.concatenate([np.frombuffer(parts.term_counts, dtype="<u2") if parts.term_counts else
                             np.zeros(len(parts.digests) // DIGEST, dtype="<u2") for parts in found])
    ids = np.frombuffer(b"".join(parts.term_ids for parts in found if parts.term_counts), dtype="<u2")
    weights = np.frombuffer(b"".join(parts.term_weights for parts in found if parts.term_counts), dtype=np.uint8)
    rows = np.repeat(np.arange(len(counts)), counts)
    return np.bincount(rows, weights=query[ids] * weights, minlength=len(counts)) / TERM_STEP


DIGEST = 8
"""Bytes of a text's digest in `Parts`."""
TERM_STEP = 50
"""A stored term weight counts steps of 1/TERM_STEP (splade.STEP)."""

_encoder = msgspec.msgpack.Encoder()
_decoder = msgspec.msgpack.Decoder(_Vector)
_parts_decoder = msgspec.msgpack.Decoder(Parts)


def _read(value: Stored) -> _Vector | None:
    """A stored vector, or None if its bytes cannot be read (damaged: as if never embedded,
    so that it is embedded again; a flipped byte inside the numbers is not noticed)."""
    try:
        return _decoder.decode(value)
    except msgspec.DecodeError:
        return None


def touched_entities(log: LogReader, start: int, stop: int, limit: int | None = None) -> tuple[list[str], int]:
    """The entity streams changed in [start, stop], and the position read through.

    With `limit`, reading stops after the event that brings the count to `limit`.
    """
    touched: dict[str, None] = {}
    for envelope in log.all(start, stop):
        if isinstance(envelope.event, ENTITY_EVENTS):
            touched[envelope.stream] = None
            if limit is not None and len(touched) >= limit:
                return list(touched), envelope.position
    return list(touched), stop


class _Matrix:
    """The vectors of one workspace, a row each; a freed row is zero and reused."""

    def __init__(self, dimensions: int, capacity: int = 256) -> None:
        np = load_numpy()
        self.data = np.zeros((max(capacity, 1), dimensions), dtype=np.float32)  # untouched rows cost no memory
        self.streams: list[str | None] = []
        self.versions: list[int] = []
        self.rows: dict[str, int] = {}
        self.free: list[int] = []

    def set(self, stream: str, version: int, vector: Any) -> None:
        row = self.rows.get(stream)
        if row is None:
            if self.free:
                row = self.free.pop()
            else:
                row = len(self.streams)
                self.streams.append(None)
                self.versions.append(0)
                if row >= len(self.data):  # grow by half: at 50k rows, doubling held 25 MB for nothing
                    np = load_numpy()
                    grown = np.zeros((len(self.data) * 3 // 2, self.data.shape[1]), dtype=np.float32)
                    grown[:row] = self.data[:row]
                    self.data = grown
            self.rows[stream] = row
            self.streams[row] = stream
        self.versions[row] = version
        self.data[row] = vector

    def remove(self, stream: str) -> None:
        row = self.rows.pop(stream, None)
        if row is not None:
            self.data[row] = 0
            self.streams[row] = None
            self.free.append(row)

    def nearest(self, query: Any, depth: int) -> list[Match]:
        size = len(self.streams)
        if not self.rows or depth <= 0:
            return []
        scores = self.data[:size] @ query
        count = min(depth, size)
        np = load_numpy()
        top = np.argpartition(-scores, count - 1)[:count] if count < size else np.arange(size)
        top = top[np.argsort(-scores[top], kind="stable")]
        streams, versions = self.streams, self.versions
        return [(s, versions[row], float(scores[row])) for row in top.tolist() if (s := streams[row]) is not None]


class Vectors:
    """The vectors of the model `model` in a store, and their in-memory matrices."""

    NAME = VECTORS

    def __init__(self, env: LmdbEnv, model: str) -> None:
        self.env = env
        self.model = model
        absent = env.readonly and self.NAME not in env.database_names()
        self.db = None if absent else env.open_db(self.NAME)
        self._prefix = vector_prefix(model)
        self._parts = vector_prefix(model + "/parts")  # a key space of its own: never loaded into the matrices
        self._matrices: dict[str, _Matrix] = {}
        self._where: dict[str, str] = {}
        """stream -> workspace of its row"""
        self.position = -1
        """The checkpoint the matrices reflect; -1 until they are loaded."""
        self.erasures = 0
        """The log's erasure count when the matrices were loaded."""

    # --- the store ------------------------------------------------------------------------

    def checkpoint(self, txn: lmdb.Transaction) -> int:
        """The log position the stored vectors are current through."""
        value = None if self.db is None else txn.get(self._prefix, db=self.db)
        return 0 if value is None else unpack_u64(value)

    def versions(self, txn: lmdb.Transaction, streams: Iterable[str]) -> dict[str, int]:
        """The entity version each of `streams` has a stored vector of (absent: none)."""
        found = {}
        if self.db is not None:
            for stream in streams:
                value = txn.get(self._prefix + stream.encode(), db=self.db)
                vector = None if value is None else _read(value)
                if vector is not None:
                    found[stream] = vector.version
        return found

    def parts(self, txn: lmdb.Transaction, stream: str) -> Parts | None:
        """The parts of the stored vector of `stream` (None: none, or unreadable)."""
        value = None if self.db is None else txn.get(self._parts + stream.encode(), db=self.db)
        if value is None:
            return None
        try:
            return _parts_decoder.decode(value)
        except msgspec.DecodeError:
            return None

    def store(
        self,
        txn: lmdb.Transaction,
        put: Iterable[tuple[str, str, int, Any] | tuple[str, str, int, Any, Parts | None]],
        drop: Iterable[str],
        checkpoint: int | None,
    ) -> None:
        """Keep (stream, workspace, version, vector[, parts]) for each of `put`, forget `drop`,
        move the checkpoint (None: leave it, for vectors made ahead of it)."""
        assert self.db is not None
        for stream, workspace, version, vector, *rest in put:
            data = load_numpy().asarray(vector, dtype="<f2").tobytes()
            txn.put(self._prefix + stream.encode(), _encoder.encode(_Vector(workspace, version, data)), db=self.db)
            parts = rest[0] if rest else None
            if parts is None:
                txn.delete(self._parts + stream.encode(), db=self.db)
            else:
                txn.put(self._parts + stream.encode(), _encoder.encode(parts), db=self.db)
        for stream in drop:
            txn.delete(self._prefix + stream.encode(), db=self.db)
            txn.delete(self._parts + stream.encode(), db=self.db)
        if checkpoint is not None:
            txn.put(self._prefix, pack_u64(checkpoint), db=self.db)

    def took(self, put: Iterable[tuple[Any, ...]]) -> None:
        """Vectors this process just stored ahead of the checkpoint (`store`'s `put`, committed):
        into the matrices, if they are loaded, so that a search finds them before the projector's
        checkpoint passes them (`refresh` reads them again then)."""
        if self.position < 0:
            return  # not loaded: the first search loads every stored vector
        np = load_numpy()
        for stream, workspace, version, vector, *_ in put:
            self._set(stream, _Vector(workspace, version, np.asarray(vector, dtype="<f2").tobytes()))

    def forget(self, txn: lmdb.Transaction) -> None:
        """Drop every stored vector of every model (a rebuild re-embeds) and the matrices."""
        if self.db is not None:
            txn.drop(self.db, delete=False)
        self._matrices.clear()
        self._where.clear()
        self.position = -1

    @property
    def prefixes(self) -> tuple[bytes, bytes]:
        """The prefixes of every key of this model: its vectors (and checkpoint), and their parts."""
        return self._prefix, self._parts

    def clear(self, txn: lmdb.Transaction) -> None:
        """Drop this model's vectors, their parts and its checkpoint (other models' stay)."""
        if self.db is None:
            return
        for prefix in self.prefixes:
            with txn.cursor(self.db) as cursor:
                found = cursor.set_range(prefix)
                while found and bytes(cursor.key()).startswith(prefix):
                    found = cursor.delete()
        self.unload()

    def unload(self) -> None:
        """Let go of the matrices (the next search loads them again)."""
        self._matrices.clear()
        self._where.clear()
        self.position = -1

    def rewind(self, txn: lmdb.Transaction) -> None:
        """Check every vector again from the start of the log (after a rebuild): this model's
        vectors are kept, so an entity whose version did not change is not embedded again; the
        matrices are loaded afresh. Other models' vectors are left as they are: a rebuild does
        not say which model the store is served with (one served through an endpoint would pay
        for embedding it all again), and a server of theirs brings them up to date."""
        if self.db is not None:
            txn.delete(self._prefix, db=self.db)
        self._matrices.clear()
        self._where.clear()
        self.position = -1

    # --- searching ------------------------------------------------------------------------

    def refresh(self, txn: lmdb.Transaction, log: LogReader) -> int:
        """Bring the matrices to the stored checkpoint (read in `txn`, with `log` of the same snapshot)."""
        checkpoint = self.checkpoint(txn)
        erasures = log.erasures()
        if self.db is None or (checkpoint == self.position and erasures == self.erasures):
            return checkpoint
        if self.position < 0 or checkpoint < self.position or erasures != self.erasures:
            self._load_all(txn)
            self.erasures = erasures
        else:
            streams, _ = touched_entities(log, self.position + 1, checkpoint)
            for stream in streams:
                value = txn.get(self._prefix + stream.encode(), db=self.db)
                vector = None if value is None else _read(value)
                if vector is None:
                    self._remove(stream)
                else:
                    self._set(stream, vector)
        self.position = checkpoint
        return checkpoint

    def _load_all(self, txn: lmdb.Transaction) -> None:
        self._matrices.clear()
        self._where.clear()
        prefix = self._prefix
        capacity = txn.stat(self.db)["entries"]  # sized once: growing step by step left the heap in holes
        with txn.cursor(db=self.db) as cursor:
            if not cursor.set_range(prefix + b"\x00"):
                return
            for key, value in cursor:
                if not bytes(key).startswith(prefix):
                    break
                vector = _read(value)
                if vector is not None:
                    self._set(bytes(key[len(prefix):]).decode(), vector, capacity)

    def _set(self, stream: str, vector: _Vector, capacity: int = 256) -> None:
        values = load_numpy().frombuffer(vector.data, dtype="<f2")
        if self._where.get(stream, vector.workspace) != vector.workspace:
            self._remove(stream)
        matrix = self._matrices.get(vector.workspace)
        if matrix is None:
            matrix = self._matrices[vector.workspace] = _Matrix(len(values), capacity)
        if len(values) == matrix.data.shape[1]:
            matrix.set(stream, vector.version, values)
            self._where[stream] = vector.workspace

    def _remove(self, stream: str) -> None:
        workspace = self._where.pop(stream, None)
        if workspace is not None:
            self._matrices[workspace].remove(stream)

    def nearest(self, workspace: str, query: Any, depth: int) -> list[Match]:
        """The `depth` vectors of `workspace` most similar to the unit vector `query`, best first."""
        matrix = self._matrices.get(workspace)
        if matrix is None or query.shape[-1] != matrix.data.shape[1]:
            return []
        np = load_numpy()
        return matrix.nearest(np.asarray(query, dtype=np.float32), depth)

    def count(self, workspace: str) -> int:
        """How many vectors of `workspace` are in memory."""
        matrix = self._matrices.get(workspace)
        return 0 if matrix is None else len(matrix.rows)
