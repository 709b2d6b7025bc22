"""The named LMDB databases of one generation of the views, and the pointer to the live one.

Views live in generations: `views.<n>.<table>`. A rebuild fills generation n + 1 while
n keeps serving, then one write transaction moves the pointer and drops generation n.
"""

from __future__ import annotations

from typing import NamedTuple

import lmdb

from eventstore import EventStore
from eventstore.keys import pack_u32, pack_u64, unpack_u32, unpack_u64

__all__ = [
    "TABLES",
    "VIEWS_FORMAT",
    "Pointer",
    "Tables",
    "generations_on_disk",
    "open_tables",
    "table_names",
]

VIEWS_FORMAT = 1
"""Bump when a view's layout changes: stores with another format are rebuilt at open."""

TABLES = ("entities", "relations", "names", "order", "adjacency", "workspaces", "meta")

_GENERATION = b"generation"
_FORMAT = b"format"
_CHECKPOINT = b"checkpoint"


class Tables(NamedTuple):
    """One generation's databases (see projections.keys for their key layouts)."""

    generation: int
    entities: lmdb._Database
    relations: lmdb._Database
    names: lmdb._Database
    order: lmdb._Database
    adjacency: lmdb._Database
    workspaces: lmdb._Database
    meta: lmdb._Database

    def checkpoint(self, txn: lmdb.Transaction) -> int:
        """The position of the last event folded into this generation."""
        value = txn.get(_CHECKPOINT, db=self.meta)
        return 0 if value is None else unpack_u64(value)

    def set_checkpoint(self, txn: lmdb.Transaction, position: int) -> None:
        """Record that every event up to `position` is folded in (same transaction!)."""
        txn.put(_CHECKPOINT, pack_u64(position), db=self.meta)

    def databases(self) -> tuple[lmdb._Database, ...]:
        """The databases, in `TABLES` order."""
        return tuple(self[1:])


def table_names(generation: int) -> list[str]:
    """The database names of `generation`."""
    return [f"views.{generation}.{table}" for table in TABLES]


def generations_on_disk(store: EventStore) -> set[int]:
    """Every generation that has databases in the store, live or left over."""
    found = set()
    for name in store.database_names():
        parts = name.split(".")
        if len(parts) == 3 and parts[0] == "views" and parts[1].isdigit():
            found.add(int(parts[1]))
    return found


def open_tables(store: EventStore, generation: int, *, create: bool) -> Tables:
    """Open (or create) the databases of `generation`; call outside any transaction."""
    return Tables(generation, *(store.open_db(name, create=create) for name in table_names(generation)))


class Pointer:
    """The `views` database: which generation is live, and in which format."""

    def __init__(self, store: EventStore) -> None:
        absent = store.readonly and "views" not in store.database_names()
        self.db = None if absent else store.open_db("views")

    def generation(self, txn: lmdb.Transaction) -> int:
        """The live generation, or 0 when the views were never built or are of another format."""
        if self.db is None:
            return 0
        generation = txn.get(_GENERATION, db=self.db)
        stored_format = txn.get(_FORMAT, db=self.db)
        if generation is None or stored_format is None or unpack_u32(stored_format) != VIEWS_FORMAT:
            return 0
        return unpack_u32(generation)

    def set(self, txn: lmdb.Transaction, generation: int) -> None:
        """Make `generation` the live one, in the current format."""
        assert self.db is not None
        txn.put(_GENERATION, pack_u32(generation), db=self.db)
        txn.put(_FORMAT, pack_u32(VIEWS_FORMAT), db=self.db)
