"""The named LMDB databases of the views: two slots per view format, and the pointer to the live one.

Views live in `views.v<format>.<slot>.<table>`, slot `a` or `b`. Generation n (counted
up by every rebuild) lives in slot "ab"[n % 2]: a rebuild fills the slot that is not live
while the live one keeps serving, then one write transaction moves the pointer and
empties the old slot. Databases are emptied, never deleted, so a process opens at most
two slots' handles however many rebuilds run beside it (LMDB's named databases are a
fixed number per environment).

Each view format has its own slots and its own pointer key, so two versions of
Chronograph with different layouts can share a store: each folds and reads its own
views from the one log, and neither touches the other's.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import NamedTuple

import lmdb
from chronograph.eventstore import LmdbEnv
from chronograph.eventstore.keys import pack_u32, pack_u64, unpack_u32, unpack_u64
from chronograph.projections.keys import adjacency_key_of
from chronograph.projections.sealed import seal, unseal

__all__ = [
    "PAIRED",
    "TABLES",
    "VIEWS_FORMAT",
    "Pointer",
    "Tables",
    "entries",
    "open_tables",
    "table_names",
]

VIEWS_FORMAT = 10
"""Bump when a view's layout changes: a new format builds its own views beside the old ones.
(3: every value sealed with its checksum, see `projections.sealed`; 4: records keyed by their
stream's digest; 5: an entity's record by its stream's time-ordered bytes, which stand for
the stream's text in it, and each stream's text once in a name's record, see
`projections.keys.record_key` and `projections.records`; 6: a relation's record without its
stream's text, which its workspace, ends and type spell, see `records.stored_relation`; 7:
relations keyed by workspace and creation, found by identity through `identities`, and the
adjacency index without values, see `keys.relation_key`; 8: a workspace's keys under the 4-byte
number the views gave it instead of a 16-byte digest of its name, see `keys.workspace_key`; 9: a
name's entity streams as their 15 bytes, see `records.stored_name`; 10: adjacency keeps one key a
name, the direction in each of its duplicates, see `keys.adjacency_pair`.)"""

TABLES = ("entities", "relations", "identities", "names", "order", "adjacency", "workspaces", "meta")
PAIRED = frozenset({"adjacency"})
"""The tables that keep each row as a key and one of its sorted duplicates (`keys.adjacency_pair`)."""

_CHECKPOINT = b"checkpoint"
_ANCHOR = b"anchor"


class Tables(NamedTuple):
    """One generation's databases (see projections.keys for their key layouts)."""

    generation: int
    entities: lmdb._Database
    relations: lmdb._Database
    identities: lmdb._Database
    names: lmdb._Database
    order: lmdb._Database
    adjacency: lmdb._Database
    workspaces: lmdb._Database
    meta: lmdb._Database

    def checkpoint(self, txn: lmdb.Transaction) -> int:
        """The position of the last event folded into this generation."""
        value = txn.get(_CHECKPOINT, db=self.meta)
        return 0 if value is None else unpack_u64(unseal(value, "the checkpoint"))

    def set_checkpoint(self, txn: lmdb.Transaction, position: int, mark: int = 0) -> None:
        """Record that every event up to `position` is folded in (same transaction!), and `mark`,
        what identifies the event at `position` (see `live.anchor`; 0: not known, none kept)."""
        txn.put(_CHECKPOINT, seal(pack_u64(position)), db=self.meta)
        if mark:
            txn.put(_ANCHOR, seal(pack_u64(position) + pack_u64(mark)), db=self.meta)
        else:
            txn.delete(_ANCHOR, db=self.meta)

    def anchor(self, txn: lmdb.Transaction) -> int:
        """The mark of the event at the checkpoint as it was folded (0: none kept, as by a version
        before marks, or one kept at another position)."""
        value = txn.get(_ANCHOR, db=self.meta)
        if value is None:
            return 0
        data = unseal(value, "the checkpoint's anchor")
        return unpack_u64(data[8:]) if unpack_u64(data[:8]) == self.checkpoint(txn) else 0

    def databases(self) -> tuple[lmdb._Database, ...]:
        """The databases, in `TABLES` order."""
        return tuple(self[1:])


def slot(generation: int) -> str:
    """The slot (`a` or `b`) that holds `generation`."""
    return "ab"[generation % 2]


def table_names(generation: int) -> list[str]:
    """The database names of the slot holding `generation`."""
    return [f"views.v{VIEWS_FORMAT}.{slot(generation)}.{table}" for table in TABLES]


def open_tables(env: LmdbEnv, generation: int, *, create: bool) -> Tables:
    """The databases of `generation`'s slot; call outside any transaction."""
    return Tables(generation, *(env.open_db(name, create=create, dupsort=table in PAIRED, dupfixed=table in PAIRED)
                                for table, name in zip(TABLES, table_names(generation), strict=True)))


def entries(txn: lmdb.Transaction, db: lmdb._Database) -> Iterator[tuple[bytes, bytes]]:
    """Every entry of a table as the views' rows say it: an adjacency pair as its flat key (see
    `keys.adjacency_pair`) and an empty value."""
    paired = db.flags()["dupsort"]
    with txn.cursor(db) as cursor:
        for key, value in cursor:
            yield (adjacency_key_of(key, value), b"") if paired else (bytes(key), bytes(value))


class Pointer:
    """The `views` database: which generation of this format's views is live."""

    def __init__(self, env: LmdbEnv) -> None:
        absent = env.readonly and "views" not in env.database_names()
        self.db = None if absent else env.open_db("views")
        self.KEY = f"v{VIEWS_FORMAT}.generation".encode()
        """This format's key in the `views` database."""
        self.ERASURES = f"v{VIEWS_FORMAT}.erasures".encode()
        """The log's erasure count this format's views were last scrubbed at: in a store folder, the
        count they hold nothing of, which another version's forget moves without emptying them. Each
        format has its own: a version whose forget empties none of these views (it opened before they
        were made) must not say they hold nothing of it. (Caches before 2026-12-07 kept one for
        every format, `erasures`: their views are scrubbed once more.)"""

    def generation(self, txn: lmdb.Transaction) -> int:
        """The live generation, or 0 when views of this format were never built."""
        if self.db is None:
            return 0
        generation = txn.get(self.KEY, db=self.db)
        return 0 if generation is None else unpack_u32(generation)

    def set(self, txn: lmdb.Transaction, generation: int) -> None:
        """Make `generation` the live one."""
        assert self.db is not None
        txn.put(self.KEY, pack_u32(generation), db=self.db)

    def erasures(self, txn: lmdb.Transaction) -> int | None:
        """The erasure count these views were last scrubbed at (None: never said)."""
        found = None if self.db is None else txn.get(self.ERASURES, db=self.db)
        return None if found is None else unpack_u64(found)

    def set_erasures(self, txn: lmdb.Transaction, count: int) -> None:
        """Record that these views hold nothing of the log's first `count` erasures."""
        assert self.db is not None
        txn.put(self.ERASURES, pack_u64(count), db=self.db)
