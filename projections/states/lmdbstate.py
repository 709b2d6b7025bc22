"""The fold's `State` on LMDB: record writes with their indexes, inside one write transaction.

`LmdbState` updates the tables one event at a time (inline); `bulkload` lays a whole
`DictState` into empty tables in key order (a rebuild). Both produce byte-identical
databases, which the tests check.
"""

from __future__ import annotations

from chronograph.eventstore.keys import unpack_u32
from chronograph.projections.errors import ViewsDamagedError
from chronograph.projections.keys import (
    ENTITY,
    INCOMING,
    LAST_NUMBER,
    LAST_WORKSPACE,
    NO_WORKSPACE,
    OUTGOING,
    RELATION,
    adjacency_key,
    adjacency_pair,
    context_key,
    identity_value,
    name_key,
    number_key,
    order_key,
    record_key,
    relation_key,
    totals_key,
    type_count_key,
    workspace_key,
)
from chronograph.projections.records import (
    ContextRecord,
    EntityRecord,
    NameRecord,
    RelationRecord,
    TypeCount,
    WorkspaceRecord,
    decode_name,
    decode_type_count,
    decode_workspace,
    encode,
    spelled,
    stored_entity,
    stored_name,
    stored_relation,
)
from chronograph.projections.sealed import seal, unseal
from chronograph.projections.states.graph import LmdbGraph

__all__ = ["LmdbState", "next_number", "number_rows", "unnumbered"]

_NO_NAME = encode(stored_name(NameRecord(None, ())))


def next_number(last: int) -> int:
    """The number after `last` (see `LmdbState._numbered`).

    Raises:
        ViewsDamagedError: If `last` was the highest a workspace is given.
    """
    if last >= LAST_WORKSPACE:
        raise ViewsDamagedError(f"the views have numbered {LAST_WORKSPACE:,} workspaces, the most they can")
    return last + 1


def number_rows(numbered: dict[str, bytes], last: int) -> list[tuple[bytes, bytes]]:
    """The `workspaces` rows that keep the numbers `numbered` gives (workspace -> key prefix) and
    `last`, the last number given (none when `numbered` is empty), in key order."""
    rows = [(number_key(workspace), seal(key)) for workspace, key in numbered.items()]
    if numbered:
        rows.append((LAST_NUMBER, seal(workspace_key(last))))
    rows.sort(key=lambda row: row[0])
    return rows


def unnumbered(workspace: str) -> ViewsDamagedError:
    """A record of a workspace the views never numbered is to be changed: they are damaged."""
    return ViewsDamagedError(f"the views hold records of workspace {workspace!r} but not its number")


class LmdbState(LmdbGraph):
    """Reads and writes the live views inside a write transaction."""

    __slots__ = ()
    from_start = False  # the live views (see `fold.State.from_start`)

    def get_entity(self, stream: str) -> EntityRecord | None:
        return self.entity_by_stream(stream)

    def live_entity(self, workspace: str, name: str) -> EntityRecord | None:
        return self.entity(workspace, name)

    def add_entity(self, entity: EntityRecord) -> None:
        txn, tables = self.txn, self.tables
        stream_key = record_key(entity.stream)
        txn.put(stream_key, encode(stored_entity(entity, stream_key)), db=tables.entities)
        ws = self._numbered(entity.workspace)
        key = name_key(ws, entity.name)
        known = decode_name(txn.get(key, db=tables.names) or _NO_NAME).streams
        streams = known if entity.stream in known else (*known, entity.stream)
        txn.put(key, encode(stored_name(NameRecord(entity.stream, streams))), db=tables.names)
        txn.put(order_key(ws, ENTITY, entity.seq), stream_key, db=tables.order)
        self._count(entity.workspace, ws, ENTITY, entity.entity_type, +1)

    def changed_entity(self, entity: EntityRecord, old_type: str) -> None:
        key = record_key(entity.stream)
        self.txn.put(key, encode(stored_entity(entity, key)), db=self.tables.entities)
        if old_type != entity.entity_type:
            ws = self._ws(entity.workspace)
            self._count(entity.workspace, ws, ENTITY, old_type, -1, total=False)
            self._count(entity.workspace, ws, ENTITY, entity.entity_type, +1, total=False)

    def remove_entity(self, entity: EntityRecord) -> None:
        txn, tables = self.txn, self.tables
        txn.delete(record_key(entity.stream), db=tables.entities)
        ws = self._ws(entity.workspace)
        key = name_key(ws, entity.name)
        known = decode_name(txn.get(key, db=tables.names) or _NO_NAME)
        if known.live == entity.stream:
            txn.put(key, encode(stored_name(NameRecord(None, known.streams))), db=tables.names)
        txn.delete(order_key(ws, ENTITY, entity.seq), db=tables.order)
        self._count(entity.workspace, ws, ENTITY, entity.entity_type, -1)

    def present(self, entity: EntityRecord) -> set[str]:
        return set(entity.observations)  # the record was decoded whole anyway

    def get_relation(self, stream: str) -> RelationRecord | None:
        return self.relation_by_stream(stream)

    def add_relation(self, relation: RelationRecord) -> None:
        txn, tables = self.txn, self.tables
        ws = self._numbered(relation.workspace)
        key = relation_key(ws, relation.seq)
        txn.put(key, encode(stored_relation(relation)), db=tables.relations)
        txn.put(record_key(relation.stream), identity_value(spelled(relation), key), db=tables.identities)
        for name, way in ((relation.source, OUTGOING), (relation.target, INCOMING)):
            txn.put(*adjacency_pair(adjacency_key(ws, name, way, relation.seq)), db=tables.adjacency)
        self._count(relation.workspace, ws, RELATION, relation.relation_type, +1)

    def changed_relation(self, relation: RelationRecord) -> None:
        ws = self._ws(relation.workspace)
        if ws == NO_WORKSPACE:
            raise unnumbered(relation.workspace)
        self.txn.put(relation_key(ws, relation.seq), encode(stored_relation(relation)), db=self.tables.relations)

    def remove_relation(self, relation: RelationRecord) -> None:
        txn, tables = self.txn, self.tables
        ws = self._ws(relation.workspace)
        txn.delete(relation_key(ws, relation.seq), db=tables.relations)
        txn.delete(record_key(relation.stream), db=tables.identities)
        for name, way in ((relation.source, OUTGOING), (relation.target, INCOMING)):
            txn.delete(*adjacency_pair(adjacency_key(ws, name, way, relation.seq)), db=tables.adjacency)
        self._count(relation.workspace, ws, RELATION, relation.relation_type, -1)

    def get_context(self, workspace: str) -> ContextRecord | None:
        return self.context(workspace)

    def save_context(self, context: ContextRecord) -> None:
        ws = self._numbered(context.workspace)
        self.txn.put(context_key(ws), encode(context), db=self.tables.workspaces)
        self._totals(context.workspace, ws)

    def saw_workspace(self, workspace: str) -> None:
        self._totals(workspace, self._numbered(workspace))

    def forget_entity(self, stream: str, workspace: str) -> None:
        entity = self.get_entity(stream)
        if entity is not None:
            for relation in self.relations_of(workspace, entity.name):
                self.remove_relation(relation)
            self.remove_entity(entity)
        ws = self._ws(workspace)
        names = []
        with self.txn.cursor(self.tables.names) as cursor:  # every name it bore: the workspace's names, scanned
            if cursor.set_range(ws):
                for key, value in cursor:
                    if not bytes(key).startswith(ws):
                        break
                    if stream in decode_name(value).streams:
                        names.append(bytes(key))
        for key in names:
            self._drop_stream(key, stream)

    def drop_name_stream(self, workspace: str, name: str, stream: str) -> None:
        """Take `stream` out of the streams ever created under `name` (forgetting); a name no
        stream is left under disappears from the views."""
        self._drop_stream(name_key(self._ws(workspace), name), stream)

    def _drop_stream(self, key: bytes, stream: str) -> None:
        value = self.txn.get(key, db=self.tables.names)
        if value is None:
            return
        known = decode_name(value)
        streams = tuple(s for s in known.streams if s != stream)
        live = None if known.live == stream else known.live
        if streams or live is not None:
            self.txn.put(key, encode(stored_name(NameRecord(live, streams))), db=self.tables.names)
        else:
            self.txn.delete(key, db=self.tables.names)

    def _numbered(self, workspace: str) -> bytes:
        """`workspace`'s key prefix, numbering it now if the views have not met it.

        Numbers are given in the order the fold first adds to a workspace (an entity, a
        relation, a context, or a sight of it), the order `DictState` keeps and `bulkload` numbers
        by, so an inline fold and a rebuild write the same bytes.
        """
        ws = self._ws(workspace)
        if ws != NO_WORKSPACE:
            return ws
        number = next_number(self.last_number())
        ws = self._workspace_keys[workspace] = workspace_key(number)
        for key, value in number_rows({workspace: ws}, number):
            self.txn.put(key, value, db=self.tables.workspaces)
        return ws

    def last_number(self) -> int:
        """The last number given to a workspace (0: none yet)."""
        last = self.txn.get(LAST_NUMBER, db=self.tables.workspaces)
        return 0 if last is None else unpack_u32(unseal(last, "the last workspace number"))

    def _totals(self, workspace: str, ws: bytes) -> WorkspaceRecord:
        if ws == NO_WORKSPACE:
            raise unnumbered(workspace)
        key = totals_key(ws)
        value = self.txn.get(key, db=self.tables.workspaces)
        if value is not None:
            return decode_workspace(value)
        record = WorkspaceRecord(workspace)
        self.txn.put(key, encode(record), db=self.tables.workspaces)
        return record

    def _count(
        self, workspace: str, ws: bytes, kind: bytes, type_name: str, delta: int, total: bool = True
    ) -> None:
        txn, db = self.txn, self.tables.workspaces
        if ws == NO_WORKSPACE:
            raise unnumbered(workspace)
        key = type_count_key(ws, kind, type_name)
        value = txn.get(key, db=db)
        count = (0 if value is None else decode_type_count(value).count) + delta
        if count:
            txn.put(key, encode(TypeCount(type_name, count)), db=db)
        else:
            txn.delete(key, db=db)
        if total:
            record = self._totals(workspace, ws)
            if kind == ENTITY:
                record = WorkspaceRecord(record.name, record.entities + delta, record.relations)
            else:
                record = WorkspaceRecord(record.name, record.entities, record.relations + delta)
            txn.put(totals_key(ws), encode(record), db=db)
