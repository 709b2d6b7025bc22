"""Reading the graph from the LMDB views within one transaction: a consistent snapshot.

`LmdbGraph` and `DictGraph` (time travel) answer the same questions, so the server
answers "now" and "as of then" with the same code.
"""

from __future__ import annotations

import sys
import zlib
from collections import Counter
from collections.abc import Iterable, Iterator
from itertools import islice
from typing import Literal, Protocol, TypeVar

import lmdb
from chronograph.eventstore.keys import Stored, entity_stream_of, unpack_u64
from chronograph.projections.errors import ViewsDamagedError
from chronograph.projections.keys import (
    ENTITY,
    INCOMING,
    NO_WORKSPACE,
    OUTGOING,
    adjacency_end,
    adjacency_name,
    context_key,
    is_totals_key,
    name_key,
    number_key,
    order_key,
    order_prefix,
    record_key,
    relation_key,
    totals_key,
    workspace_of,
)
from chronograph.projections.records import (
    ContextRecord,
    EntityRecord,
    RelationRecord,
    WorkspaceRecord,
    decode_context,
    decode_name,
    decode_type_count,
    decode_workspace,
    entity_decoder,
    relation_decoder,
)
from chronograph.projections.sealed import RESIDUE, unseal
from chronograph.projections.streams import relation_stream
from chronograph.projections.tables import Tables

__all__ = ["Direction", "Graph", "LmdbGraph", "page"]


T = TypeVar("T")
BATCH = 256
"""Records read in one call when a scan reads many."""
_entity, _relation = entity_decoder.decode, relation_decoder.decode
"""The hot loops check the checksum themselves (one frame fewer per record)."""
_crc = zlib.crc32


def _spelled(relation: RelationRecord, key: Stored, workspace: str) -> RelationRecord:
    """`relation` as read from its table under `key` (its `relation_key`, or the key's last 8
    bytes) in `workspace`, what its record leaves out put back (see `records.stored_relation`):
    its workspace and its stream's text where its fields spell it, its creation and its last
    change."""
    if not relation.stream:
        relation.workspace = workspace
        relation.stream = relation_stream(relation.workspace, relation.source, relation.relation_type, relation.target)
    if not relation.seq:
        relation.seq = unpack_u64(key[-8:])
    if not relation.updated_at:
        relation.updated_at = relation.created_at
    return relation


def _sound(value: Stored) -> Stored:
    """A record as read, its checksum checked."""
    if _crc(value) != RESIDUE:
        raise ViewsDamagedError("a record fails its checksum")
    return value


def _dated(entity: EntityRecord) -> EntityRecord:
    """`entity` as read from its table, its last change put back (see `records.stored_entity`)."""
    if not entity.updated_at:
        entity.updated_at = entity.created_at
    return entity


def page(items: Iterable[T], offset: int, limit: int | None) -> Iterator[T]:
    """`limit` items of `items` after the first `offset` (all the rest when `limit` is None),
    whatever the size of the numbers: a page past the end is empty, never an error."""
    if offset >= sys.maxsize:  # islice's bounds stop there; nothing is that long
        return iter(())
    stop = None if limit is None or offset + limit >= sys.maxsize else offset + limit
    return islice(items, offset, stop)


Direction = Literal["out", "in", "both"]


class Graph(Protocol):
    """The questions every view of the graph (current or past) can answer."""

    position: int
    """The log position this view reflects."""

    def entity(self, workspace: str, name: str) -> EntityRecord | None: ...
    def entity_by_stream(self, stream: str) -> EntityRecord | None: ...
    def entities(
        self, workspace: str, offset: int = 0, limit: int | None = None
    ) -> Iterator[EntityRecord]: ...
    def relations(
        self, workspace: str, offset: int = 0, limit: int | None = None
    ) -> Iterator[RelationRecord]: ...
    def relation(
        self, workspace: str, source: str, relation_type: str, target: str
    ) -> RelationRecord | None: ...
    def relations_of(
        self, workspace: str, name: str, direction: Direction = "both"
    ) -> list[RelationRecord]: ...
    def most_connected(self, workspace: str, limit: int) -> list[tuple[str, int]]:
        """The `limit` names with the most live relations, and how many, most first."""
        ...
    def context(self, workspace: str) -> ContextRecord | None: ...
    def workspace(self, workspace: str) -> WorkspaceRecord | None: ...
    def workspaces(self) -> list[WorkspaceRecord]: ...
    def type_counts(self, workspace: str, kind: bytes) -> dict[str, int]: ...
    def name_streams(self, workspace: str, name: str) -> tuple[str, ...]: ...


SCAN_SHARE = 4
"""When the workspace has at most this many relations per name asked about, reading all of them
once is cheaper than looking up each name's (each relation would be met about twice)."""


def relations_touching(graph: Graph, workspace: str, names: Iterable[str]) -> list[RelationRecord]:
    """Relations with at least one end among `names`, each once, oldest first."""
    wanted = dict.fromkeys(names)
    totals = graph.workspace(workspace) if len(wanted) > 64 else None
    if totals is not None and totals.relations <= SCAN_SHARE * len(wanted):  # a search of a common word
        return [r for r in graph.relations(workspace) if r.source in wanted or r.target in wanted]
    found: dict[str, RelationRecord] = {}
    for name in wanted:
        for record in graph.relations_of(workspace, name):
            found[record.stream] = record
    return sorted(found.values(), key=lambda record: record.seq)


class LmdbGraph:
    """The live views of one generation, read inside `txn`."""

    __slots__ = ("txn", "tables", "position", "_workspace_keys")

    def __init__(self, txn: lmdb.Transaction, tables: Tables) -> None:
        self.txn = txn
        self.tables = tables
        self.position = tables.checkpoint(txn)
        self._workspace_keys: dict[str, bytes] = {}

    def _ws(self, workspace: str) -> bytes:
        """The prefix of `workspace`'s keys (`keys.workspace_key`), or `NO_WORKSPACE`, which holds
        nothing, when these views have not met it. Kept for the transaction: a number, once
        given, is never taken back or given again within a generation."""
        key = self._workspace_keys.get(workspace)
        if key is None:
            value = self.txn.get(number_key(workspace), db=self.tables.workspaces)
            if value is None:
                return NO_WORKSPACE
            key = bytes(unseal(value, "a workspace's number"))
            if len(key) != len(NO_WORKSPACE) or key == NO_WORKSPACE:
                raise ViewsDamagedError("a workspace's number is not one")
            self._workspace_keys[workspace] = key
        return key

    def entity(self, workspace: str, name: str) -> EntityRecord | None:
        """The live entity called `name`, or None."""
        value = self.txn.get(name_key(self._ws(workspace), name), db=self.tables.names)
        if value is None:
            return None
        live = decode_name(value).live
        return None if live is None else self.entity_by_stream(live)

    def has_entity(self, workspace: str, name: str) -> bool:
        """Whether an entity called `name` is live, as `entity` would say (its record there and
        sound), without decoding the entity.

        Raises:
            ViewsDamagedError: If its record fails its checksum.
        """
        value = self.txn.get(name_key(self._ws(workspace), name), db=self.tables.names)
        live = None if value is None else decode_name(value).live
        if live is None:
            return False
        record = self.txn.get(record_key(live), db=self.tables.entities)
        if record is None:
            return False
        _sound(record)  # damaged views are said, as `entity` says them
        return True

    def entity_by_stream(self, stream: str) -> EntityRecord | None:
        """The live entity whose stream is `stream`, or None."""
        value = self.txn.get(record_key(stream), db=self.tables.entities)
        if value is None:
            return None
        if _crc(value) != RESIDUE:
            raise ViewsDamagedError("a record fails its checksum")
        entity = _dated(_entity(value))
        if not entity.stream:  # its key spells it (see `records.stored_entity`)
            entity.stream = stream
        return entity

    def relation_by_stream(self, stream: str) -> RelationRecord | None:
        """The live relation whose stream is `stream`, or None."""
        key = self.txn.get(record_key(stream), db=self.tables.identities)
        if key is None:
            return None
        workspace = workspace_of(stream)
        if workspace is not None and len(key) == 8:  # its stream spells its workspace (`keys.identity_value`)
            key = self._ws(workspace) + key
        relation = _spelled(_relation(self._indexed(key, self.tables.relations)), key, workspace or "")
        if relation.stream != stream:
            raise ViewsDamagedError("an index points at another record")
        return relation

    def relation_at(self, workspace: str, seq: int) -> RelationRecord | None:
        """The live relation of `workspace` its event at log position `seq` created, or None."""
        ws = self._ws(workspace)
        if ws == NO_WORKSPACE:
            return None
        key = relation_key(ws, seq)
        value = self.txn.get(key, db=self.tables.relations)
        return None if value is None else _spelled(_relation(_sound(value)), key, workspace)

    def entities(
        self, workspace: str, offset: int = 0, limit: int | None = None
    ) -> Iterator[EntityRecord]:
        """The workspace's live entities, oldest first."""
        for key, value in self._records(self._ordered(workspace, ENTITY, offset, limit), self.tables.entities):
            entity = _dated(_entity(value))
            if not entity.stream:  # its key spells it (see `records.stored_entity`)
                entity.stream = entity_stream_of(key)
            yield entity

    def restored_since(self, workspace: str, position: int, created_by: int) -> Iterator[str]:
        """The streams of the workspace's live entities placed in creation order after log position
        `position` (made or restored since: a restore takes its place there) whose entity was
        created by `created_by` (µs): those restored since, and any made since in that microsecond."""
        ws = self._ws(workspace)
        keys = self._scan_values(order_prefix(ws, ENTITY), self.tables.order, order_key(ws, ENTITY, position + 1))
        for key, value in self._records(keys, self.tables.entities):
            entity = _entity(value)
            if entity.created_at <= created_by:
                yield entity.stream or entity_stream_of(key)  # its key spells it (`records.stored_entity`)

    def relations(
        self, workspace: str, offset: int = 0, limit: int | None = None
    ) -> Iterator[RelationRecord]:
        """The workspace's live relations, oldest first."""
        for key, value in page(self._scan_items(self._ws(workspace), self.tables.relations), offset, limit):
            if _crc(value) != RESIDUE:
                raise ViewsDamagedError("a record fails its checksum")
            yield _spelled(_relation(value), key, workspace)

    def relation(
        self, workspace: str, source: str, relation_type: str, target: str
    ) -> RelationRecord | None:
        """The live relation with this identity, or None."""
        return self.relation_by_stream(relation_stream(workspace, source, relation_type, target))

    def relations_of(
        self, workspace: str, name: str, direction: Direction = "both"
    ) -> list[RelationRecord]:
        """The live relations leaving (out), reaching (in) or touching (both) `name`."""
        way = {"out": OUTGOING, "in": INCOMING, "both": b""}[direction]
        db, ws = self.tables.relations, self._ws(workspace)
        found: list[RelationRecord] = []
        for end, seq in self._ends(adjacency_name(ws, name), way):
            record = _spelled(_relation(self._indexed(ws + seq, db)), seq, workspace)  # ws + seq: its key
            if record.workspace == workspace and (record.source == name if end == OUTGOING else record.target == name):
                found.append(record)
        if direction == "both":  # a self-relation is both outgoing and incoming (its creation, `seq`, is its own)
            found = list({record.seq: record for record in found}.values())
            found.sort(key=lambda record: record.seq)
        return found

    def most_connected(self, workspace: str, limit: int) -> list[tuple[str, int]]:
        """The `limit` names with the most live relations, and how many, most first (ties in the
        order of the names' digests, as every view orders them). Counted on
        the adjacency index's keys (no record is read but one per name found), so it costs a
        key scan of the workspace's relations."""
        prefix = self._ws(workspace)
        counts: Counter[bytes] = Counter()
        width = len(prefix)
        name, incoming = b"", set[bytes]()
        with self.txn.cursor(self.tables.adjacency) as cursor:
            if cursor.set_range(prefix):
                for key, value in cursor:  # (workspace, name) and a relation end: its incoming ones first
                    if key[:width] != prefix:
                        break
                    if key[width:] != name:  # the name's digest
                        name, incoming = bytes(key[width:]), set()
                    way, seq = adjacency_end(value)
                    if way == INCOMING:
                        incoming.add(seq)
                    elif seq in incoming:  # a relation from the name to itself: counted once, as by a fold
                        continue
                    counts[name] += 1
        found = []
        for name_digest, count in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:limit]:
            first = self._first_end(prefix + name_digest)
            if first is None:
                continue
            record = _relation(self._indexed(prefix + first, self.tables.relations))
            ends = [n for n in (record.source, record.target) if adjacency_name(prefix, n) == prefix + name_digest]
            if ends:
                found.append((ends[0], count))
        return found

    def context(self, workspace: str) -> ContextRecord | None:
        """The workspace's context, or None if it was never set."""
        value = self.txn.get(context_key(self._ws(workspace)), db=self.tables.workspaces)
        return None if value is None else decode_context(value)

    def workspace(self, workspace: str) -> WorkspaceRecord | None:
        """The workspace's totals, or None if nothing was ever written to it."""
        value = self.txn.get(totals_key(self._ws(workspace)), db=self.tables.workspaces)
        return None if value is None else decode_workspace(value)

    def workspaces(self) -> list[WorkspaceRecord]:
        """Every workspace ever written to, by name."""
        found = []
        with self.txn.cursor(self.tables.workspaces) as cursor:
            for key, value in cursor:
                if is_totals_key(bytes(key)):
                    found.append(decode_workspace(value))
        return sorted(found, key=lambda record: record.name)

    def type_counts(self, workspace: str, kind: bytes) -> dict[str, int]:
        """Live entities (kind ENTITY) or relations (RELATION) per type, by type name."""
        counts = {}
        for value in self._scan_values(self._ws(workspace) + kind, self.tables.workspaces):
            record = decode_type_count(value)
            counts[record.type_name] = record.count
        return dict(sorted(counts.items()))

    def name_streams(self, workspace: str, name: str) -> tuple[str, ...]:
        """Every entity stream ever created under `name`, oldest first (deleted ones too)."""
        value = self.txn.get(name_key(self._ws(workspace), name), db=self.tables.names)
        return () if value is None else decode_name(value).streams

    # --- scanning ---------------------------------------------------------------------------

    def _indexed(self, key: Stored, db: lmdb._Database) -> Stored:
        """The record a key from an index points at (an entity's stream key, a relation's
        `relation_key`), its checksum checked (a damaged entry points at none)."""
        value = self.txn.get(key, db=db)
        if value is None:
            raise ViewsDamagedError("an index points at a record that is not there")
        return _sound(value)


    def _records(self, keys: Iterator[Stored], db: lmdb._Database) -> Iterator[tuple[Stored, Stored]]:
        """The records index entries (entities' stream keys) point at, with their keys, in their order, read
        `BATCH` at a time in one call each (a whole graph's read spent a third of its time on single
        reads), each checksum checked (a damaged entry points at none)."""
        with self.txn.cursor(db) as cursor:
            while batch := list(islice(keys, BATCH)):
                found = cursor.getmulti(batch)
                if len(found) != len(batch):
                    raise ViewsDamagedError("an index points at a record that is not there")
                for key, value in found:
                    if _crc(value) != RESIDUE:
                        raise ViewsDamagedError("a record fails its checksum")
                    yield key, value

    def _ordered(self, workspace: str, kind: bytes, offset: int, limit: int | None) -> Iterator[Stored]:
        return page(self._scan_values(order_prefix(self._ws(workspace), kind), self.tables.order), offset, limit)

    def _first_end(self, key: bytes) -> bytes | None:
        """The creation of the first relation end kept under a name's `key` in adjacency, or None."""
        with self.txn.cursor(self.tables.adjacency) as cursor:
            return adjacency_end(cursor.value())[1] if cursor.set_key(key) else None

    def _ends(self, key: bytes, way: bytes = b"") -> list[tuple[bytes, bytes]]:
        """The relation ends kept under a name's `key` in adjacency, (direction, creation) each (see
        `keys.adjacency_pair`): those of the direction `way`, or all of them (b"")."""
        ends = []
        with self.txn.cursor(self.tables.adjacency) as cursor:
            if cursor.set_range_dup(key, way) if way else cursor.set_key(key):
                for value in cursor.iternext_dup(keys=False):
                    end = adjacency_end(value)
                    if way and end[0] != way:  # past the direction's ends, which sort together
                        break
                    ends.append(end)
        return ends

    def _scan_items(self, prefix: bytes, db: lmdb._Database) -> Iterator[tuple[Stored, Stored]]:
        with self.txn.cursor(db) as cursor:
            if not cursor.set_range(prefix):
                return
            width = len(prefix)
            for key, value in cursor:
                if key[:width] != prefix:
                    return
                yield key, value

    def _scan_values(self, prefix: bytes, db: lmdb._Database, start: bytes | None = None) -> Iterator[Stored]:
        """The values of the keys with `prefix`, from `start` (a key with the prefix) or the first."""
        with self.txn.cursor(db) as cursor:
            if not cursor.set_range(start or prefix):
                return
            width = len(prefix)
            for key, value in cursor:
                if key[:width] != prefix:
                    return
                yield value
