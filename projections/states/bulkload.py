"""A folded state laid into empty view tables in key order: what a rebuild writes.

Each table's rows come out sorted by key, so LMDB appends them page after page
(`putmulti(append=True)`: full pages, no B-tree descent per key). Only keys are sorted;
values are encoded as they are consumed, so no second copy of the state is ever held,
and a caller can write a table in as many transactions as it likes (`chunks`). The
rows are byte for byte what `LmdbState` writes event by event; the tests compare them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from itertools import chain, islice
from operator import itemgetter
from typing import TypeVar

import lmdb
import msgspec
from chronograph.eventstore.keys import digest, pack_u64
from chronograph.projections.keys import (
    ENTITY,
    INCOMING,
    OUTGOING,
    adjacency_pair,
    context_key,
    identity_value,
    name_key,
    order_key,
    record_key,
    relation_key,
    totals_key,
    type_count_key,
    workspace_key,
)
from chronograph.projections.records import (
    NameRecord,
    TypeCount,
    bulk_encoder,
    spelled,
    stored_entity,
    stored_name,
    stored_relation,
)
from chronograph.projections.states.dictstate import DictState
from chronograph.projections.states.lmdbstate import number_rows

__all__ = ["TABLE_ROWS", "Keys", "chunks", "count_rows", "put_changes", "put_sorted", "rows", "table_rows"]

Rows = Iterator[tuple[bytes, bytes]]
T = TypeVar("T")
_first = itemgetter(0)


class Keys:
    """The record key of every entity and relation of a state, computed once (a digest each) for
    the tables that hold them (entities and order; identities), and each workspace's key prefix,
    numbered in the order the fold met them (as `LmdbState._numbered` numbers them); valid while
    the state does not change."""

    def __init__(self, state: DictState) -> None:
        self.entities = [record_key(stream) for stream in state.entities]
        self.relations = [record_key(stream) for stream in state.relations]
        self.workspaces = {workspace: workspace_key(number) for number, workspace in enumerate(state.workspaces, 1)}


def _entities(state: DictState, keys: Keys) -> Rows:
    items = sorted(zip(keys.entities, state.entities.values(), strict=True), key=_first)
    encode = bulk_encoder()
    return ((key, encode(stored_entity(entity, key))) for key, entity in items)


def _relations(state: DictState, keys: Keys) -> Rows:
    ws = keys.workspaces.__getitem__
    items = sorted(((relation_key(ws(r.workspace), r.seq), r) for r in state.relations.values()), key=_first)
    encode = bulk_encoder()
    return ((key, encode(stored_relation(relation))) for key, relation in items)


def _identities(state: DictState, keys: Keys) -> Rows:
    ws = keys.workspaces.__getitem__
    items = [(key, identity_value(spelled(r), relation_key(ws(r.workspace), r.seq)))
             for r, key in zip(state.relations.values(), keys.relations, strict=True)]
    items.sort(key=_first)
    return iter(items)


def _names(state: DictState, keys: Keys) -> Rows:
    ws = keys.workspaces.__getitem__
    items = sorted([(name_key(ws(workspace), name), known)
                    for (workspace, name), known in state._names.items()], key=_first)  # noqa: SLF001
    encode = bulk_encoder()
    return ((key, encode(stored_name(NameRecord(known[0], tuple(known[1:]))))) for key, known in items)  # type: ignore[arg-type]


def _order(state: DictState, keys: Keys) -> Rows:
    ws = keys.workspaces.__getitem__
    items = [(order_key(ws(r.workspace), ENTITY, r.seq), key)
             for r, key in zip(state.entities.values(), keys.entities, strict=True)]
    items.sort(key=_first)
    return iter(items)


def _adjacency(state: DictState, keys: Keys) -> Rows:
    ws = keys.workspaces.__getitem__
    prefixes: dict[tuple[bytes, str], bytes] = {}

    def prefix(workspace: bytes, name: str) -> bytes:
        found = prefixes.get((workspace, name))
        if found is None:
            found = prefixes[(workspace, name)] = workspace + digest(name.encode("utf-8", "surrogatepass"), 16)
        return found

    items = []
    for relation in state.relations.values():
        workspace = ws(relation.workspace)
        seq = pack_u64(relation.seq)
        items.append((prefix(workspace, relation.source) + OUTGOING + seq, b""))
        items.append((prefix(workspace, relation.target) + INCOMING + seq, b""))
    prefixes.clear()
    items.sort(key=_first)
    return iter(items)


def _workspace_rows(state: DictState, keys: Keys) -> Rows:
    ws = keys.workspaces
    items: list[tuple[bytes, msgspec.Struct]] = [
        (totals_key(ws[workspace]), record) for workspace, record in state.workspaces.items()]
    items += [(context_key(ws[workspace]), context) for workspace, context in state.contexts.items()]
    items += [(type_count_key(ws[workspace], kind, type_name), TypeCount(type_name, count))
              for (workspace, kind, type_name), count in state.type_counts.items()]
    items.sort(key=_first)
    encode = bulk_encoder()  # the numbers sort after the workspaces' own keys: their prefix is no number given
    return chain(((key, encode(record)) for key, record in items), number_rows(ws, len(ws)))


TABLE_ROWS: dict[str, Callable[[DictState, Keys], Rows]] = {
    "entities": _entities,
    "relations": _relations,
    "identities": _identities,
    "names": _names,
    "order": _order,
    "adjacency": _adjacency,
    "workspaces": _workspace_rows,
}
"""Each view table (but `meta`) and the function that yields its rows in key order."""


def table_rows(state: DictState, table: str, keys: Keys | None = None) -> Rows:
    """The rows of one view table for `state`, in key order (sorted when first asked for);
    pass the same `keys` for every table of one state."""
    return TABLE_ROWS[table](state, keys or Keys(state))


def count_rows(state: DictState) -> int:
    """How many rows `table_rows` yields over every table, without building them."""
    return (2 * len(state.entities) + 4 * len(state.relations) + len(state._names)  # noqa: SLF001
            + 2 * len(state.workspaces) + bool(state.workspaces)  # totals and numbers, the last number
            + len(state.contexts) + len(state.type_counts))


def rows(state: DictState) -> dict[str, list[tuple[bytes, bytes]]]:
    """Every key and value the view tables should hold for `state`, per table, in key order.

    (Not the `meta` table: its checkpoint is the position folded.)
    """
    keys = Keys(state)
    return {table: list(table_rows(state, table, keys)) for table in TABLE_ROWS}


def chunks(items: Iterator[T], size: int) -> Iterator[list[T]]:
    """`items` in lists of at most `size` (one write transaction each)."""
    while chunk := list(islice(items, size)):
        yield chunk


def put_sorted(txn: lmdb.Transaction, db: lmdb._Database, items: list[tuple[bytes, bytes]]) -> int:
    """Append `items` (sorted, every key above those `db` holds) to `db`; return how many.

    Raises:
        AssertionError: If a key was out of order or already there (the rows are wrong).
    """
    if db.flags()["dupsort"]:  # an adjacency's flat keys (see `keys.adjacency_pair`)
        items = [adjacency_pair(key) for key, _ in items]
    with txn.cursor(db) as cursor:
        _, added = cursor.putmulti(items, append=True)
    if added != len(items):
        raise AssertionError(f"a rebuild appended {added} of {len(items)} keys: a key out of order or repeated")
    return int(added)


def put_changes(txn: lmdb.Transaction, db: lmdb._Database, changes: list[tuple[bytes, bytes | None]]) -> int:
    """Make `changes` (sorted by key: a value to put, or None to delete the key) in `db`, which
    holds other keys too; return how many."""
    puts = []
    paired = db.flags()["dupsort"]  # an adjacency's flat keys (see `keys.adjacency_pair`)
    for key, value in changes:
        if value is None:
            txn.delete(*adjacency_pair(key), db=db) if paired else txn.delete(key, db=db)
        else:
            puts.append(adjacency_pair(key) if paired else (key, value))
    with txn.cursor(db) as cursor:
        cursor.putmulti(puts)
    return len(changes)
